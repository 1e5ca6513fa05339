/*
 * cogr-search: a real single-node OpenSearch, started in-process from Maven Central jars.
 */
package org.cogr.opensearch.node;

import java.nio.file.Path;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.cogr.launcher.LaunchOptions;
import org.cogr.launcher.Launcher;
import org.cogr.opensearch.CogrPlugin;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.http.BindHttpException;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.ingest.common.IngestCommonPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.search.pipeline.common.SearchPipelineCommonModulePlugin;
import org.opensearch.transport.BindTransportException;
import org.opensearch.transport.Netty4Plugin;

/**
 * Starts one real OpenSearch 2.19 node inside this JVM, bound to 127.0.0.1.
 *
 * <p>Why this exists: tests and the default local run of cogr-search need a real OpenSearch
 * (same analyzers, BM25 and query semantics as production), and the development machines
 * have neither Docker nor a way to download a distribution; Maven Central is reachable.
 * So the server and the modules a stock distribution ships are put on the classpath and
 * passed to {@link Node} as classpath plugins, together with the project's own plugin.
 *
 * <p>Differences from a distribution, on purpose: no security manager, no bootstrap checks
 * and no native (JNA) setup, because those are done only by {@code Bootstrap}, which this
 * launcher does not use; {@code modules/} and {@code plugins/} under the home stay empty, so
 * no jar-hell scan of plugin bundles runs either.
 *
 * <p>Protocol with the Python side ({@code cogr_search.opensearch.local_node}), shared with
 * the Elasticsearch launcher: see {@link Launcher}. Logs go to {@code <home>/logs/};
 * SIGTERM closes the node cleanly through a shutdown hook.
 */
public final class LocalNode extends Node {

    static final String PROGRAM = "local-node";

    /**
     * The modules a stock 2.19 distribution loads that cogr-search needs (HTTP/transport,
     * the standard analyzers, painless, extra mappers, reindex, ingest and search pipeline
     * processors), plus the project's plugin. In 2.19 these keep their old class names; the
     * {@code *ModulePlugin} names of the other modules only arrive in 3.0.
     */
    static final List<Class<? extends Plugin>> CLASSPATH_PLUGINS = List.of(
        Netty4Plugin.class,
        CommonAnalysisPlugin.class,
        PainlessPlugin.class,
        MapperExtrasPlugin.class,
        ReindexPlugin.class,
        IngestCommonPlugin.class,
        SearchPipelineCommonModulePlugin.class,
        CogrPlugin.class
    );

    /** Node's constructor that accepts classpath plugins is protected, hence this subclass. */
    LocalNode(Environment environment, Collection<Class<? extends Plugin>> classpathPlugins) {
        super(environment, classpathPlugins, true);
    }

    public static void main(String[] args) {
        Launcher.main(PROGRAM, args, LocalNode.class, "/cogr-local-node/log4j2.properties", LocalNode::start);
    }

    /** Builds and starts the node (home prepared and ports checked by {@link Launcher}); returns its HTTP port. */
    static int start(LaunchOptions options) throws Exception {
        // Logging must survive until the node is closed by our own shutdown hook, so log4j's
        // hook is disabled (as OpenSearch's Bootstrap does) and we shut log4j down last.
        System.setProperty("log4j.shutdownHookEnabled", "false");
        System.setProperty("log4j2.disable.jmx", "true");
        LogConfigurator.registerErrorListener();

        Path home = options.home();
        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", options.clusterName())
            .put("node.name", Launcher.NODE_NAME)
            .put("network.host", Launcher.HOST)
            .put("http.port", options.httpPort())
            .put("transport.port", options.transportPort())
            .put("discovery.type", "single-node")
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            // One node cannot host replicas: without this every index created without an
            // explicit replica count would leave the cluster yellow forever.
            .put("cluster.default_number_of_replicas", 0)
            .build();
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), Launcher.configDir(home), () -> Launcher.NODE_NAME);
        // The %node_name log pattern fails unless the node name is known before configure.
        LogConfigurator.setNodeName(Launcher.NODE_NAME);
        LogConfigurator.configure(environment);

        LocalNode node = new LocalNode(environment, CLASSPATH_PLUGINS);
        Launcher.closeOnShutdown("cogr-local-node", () -> close(node));
        try {
            node.start();
        } catch (Exception e) {
            // Someone may have taken a port between our check and the bind.
            if (Launcher.hasCause(e, BindHttpException.class)) {
                throw Launcher.portInUse(options.httpPort(), "HTTP");
            }
            if (Launcher.hasCause(e, BindTransportException.class)) {
                throw Launcher.portInUse(options.transportPort(), "transport");
            }
            throw e;
        }
        return node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress().getPort();
    }

    /** Closes the node (flushing shards and releasing the data-path lock), then log4j. */
    private static void close(Node node) {
        try {
            node.close();
            if (!node.awaitClose(30, TimeUnit.SECONDS)) {
                Launcher.STDERR.println(PROGRAM + ": node did not close within 30s");
            }
        } catch (Exception e) {
            Launcher.STDERR.println(PROGRAM + ": error while closing the node: " + Launcher.describe(e));
        } finally {
            LoggerContext context = (LoggerContext) LogManager.getContext(false);
            Configurator.shutdown(context);
        }
    }
}
