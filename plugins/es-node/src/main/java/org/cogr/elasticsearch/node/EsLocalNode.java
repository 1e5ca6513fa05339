/*
 * cogr-search: a real single-node Elasticsearch, started in-process from Maven Central jars.
 */
package org.cogr.elasticsearch.node;

import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.cogr.launcher.LaunchOptions;
import org.cogr.launcher.Launcher;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.http.BindHttpException;
import org.elasticsearch.http.HttpServerTransport;
import org.elasticsearch.node.CogrClasspathNode;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.transport.BindTransportException;
import org.elasticsearch.transport.netty4.Netty4Plugin;

/**
 * Starts one real Elasticsearch 8.17 node inside this JVM, bound to 127.0.0.1, without
 * x-pack (no security: plain HTTP, no license, no ML).
 *
 * <p>Why this exists: the same as the OpenSearch launcher ({@code LocalNode}): tests and
 * local runs need a real Elasticsearch, the development machines have no Docker and no
 * way to download a distribution, and Maven Central is reachable.
 *
 * <p>Differences from a distribution, on purpose: no security manager or entitlements,
 * no bootstrap checks, no native (JNA/Panama) setup and no jar-hell scan: Elasticsearch
 * does all of these only in {@code org.elasticsearch.bootstrap.Elasticsearch}, which this
 * launcher does not use. The netty4 module is given as a classpath plugin (see
 * {@link CogrClasspathNode}); {@code modules/} and {@code plugins/} stay empty.
 *
 * <p>Same protocol with the Python side as the OpenSearch launcher ({@link Launcher}).
 */
public final class EsLocalNode {

    static final String PROGRAM = "es-node";

    /**
     * HTTP/transport, the only module of a distribution published to Maven Central for 8.x
     * that cogr-search needs, and our stand-in for the unpublished rest-root module.
     * (analysis-common, mapper-extras, reindex, ingest-common, painless are not published;
     * the server's built-in standard analyzer, lowercase filter and lowercase normalizer
     * are what the mapping uses.)
     */
    static final List<Class<? extends Plugin>> CLASSPATH_PLUGINS = List.of(Netty4Plugin.class, RootEndpointPlugin.class);

    private EsLocalNode() {
    }

    public static void main(String[] args) {
        Launcher.main(PROGRAM, args, EsLocalNode.class, "/cogr-es-node/log4j2.properties", EsLocalNode::start);
    }

    static int start(LaunchOptions options) throws Exception {
        // Logging must survive until the node is closed by our own shutdown hook, so log4j's
        // hook is disabled (as Elasticsearch's bootstrap does) and we shut log4j down last.
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
            .build();
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), Launcher.configDir(home), () -> Launcher.NODE_NAME);
        // The %node_name log pattern fails unless the node name is known before configure.
        LogConfigurator.setNodeName(Launcher.NODE_NAME);
        // true keeps the console appender (warnings and errors on stderr, see the template).
        LogConfigurator.configure(environment, true);

        Node node = new CogrClasspathNode(environment, CLASSPATH_PLUGINS);
        Launcher.closeOnShutdown("cogr-es-node", () -> close(node));
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
            Configurator.shutdown((LoggerContext) LogManager.getContext(false));
        }
    }
}
