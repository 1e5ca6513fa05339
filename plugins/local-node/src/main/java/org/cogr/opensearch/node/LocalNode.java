/*
 * cogr-search: a real single-node OpenSearch, started in-process from Maven Central jars.
 */
package org.cogr.opensearch.node;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.cogr.launcher.LaunchOptions;
import org.cogr.launcher.Launcher;
import org.cogr.launcher.StartFailure;
import org.cogr.opensearch.CogrPlugin;
import org.opensearch.Version;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.http.BindHttpException;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.transport.BindTransportException;

/**
 * Starts one real OpenSearch node (2.19 or 3.x, whichever line this jar was built for) inside
 * this JVM, bound to 127.0.0.1.
 *
 * <p>Why this exists: tests and the default local run of cogr-search need a real OpenSearch
 * (same analyzers, BM25 and query semantics as production), and the development machines
 * have neither Docker nor a way to download a distribution; Maven Central is reachable.
 * So the server and the modules a stock distribution ships are put on the classpath and
 * passed to {@link Node} as classpath plugins, together with the project's own plugin. What
 * differs between OpenSearch lines (the module class names and how {@code Node} takes
 * classpath plugins) is in {@code LineNode}, one per line under {@code src/main/java-os<line>}.
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
public final class LocalNode {

    static final String PROGRAM = "local-node";
    /** Written into the cogr-plugin jar by Maven: the OpenSearch version it was compiled against. */
    static final String PLUGIN_BUILD_INFO = "/META-INF/cogr-plugin.properties";

    private LocalNode() {
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
        checkPluginVersion();
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

        Node node = LineNode.create(environment);
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

    /**
     * Refuses a cogr-plugin jar built for another OpenSearch version than the server on the
     * classpath. Why: a 2.19-built plugin on a 3.x node answers searches but its ingest
     * processor fails with NoSuchMethodError on a generic thread, and bulk requests hang.
     */
    static void checkPluginVersion() throws StartFailure {
        String built;
        try (InputStream in = CogrPlugin.class.getResourceAsStream(PLUGIN_BUILD_INFO)) {
            if (in == null) {
                throw new StartFailure("the cogr-plugin jar has no " + PLUGIN_BUILD_INFO.substring(1)
                    + " (built before engine lines existed); rebuild plugins/", Launcher.EXIT_START_FAILED);
            }
            Properties props = new Properties();
            props.load(in);
            built = props.getProperty("opensearch.version", "");
        } catch (IOException e) {
            throw new StartFailure("cannot read " + PLUGIN_BUILD_INFO.substring(1) + " from the cogr-plugin jar: "
                + Launcher.describe(e), Launcher.EXIT_START_FAILED);
        }
        String running = Version.CURRENT.toString();
        if (!running.equals(built)) {
            throw new StartFailure("the cogr-plugin jar was built for OpenSearch " + built + " but the server jar is "
                + running + "; rebuild plugins/ for this line (mvn -Dopensearch.line=" + Version.CURRENT.major + ")", Launcher.EXIT_START_FAILED);
        }
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
