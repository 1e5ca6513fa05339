/*
 * cogr-search: a real single-node OpenSearch, started in-process from Maven Central jars.
 */
package org.cogr.opensearch.node;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.cogr.opensearch.CogrPlugin;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.core.common.transport.TransportAddress;
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
 * <p>Protocol with the Python side ({@code cogr_search.opensearch.local_node}): once the
 * node has started, exactly one line {@code COGR_NODE_STARTED http://127.0.0.1:<port>} is
 * printed on stdout; every failure to start exits non-zero with one line on stderr. Logs
 * go to {@code <home>/logs/}; SIGTERM closes the node cleanly through a shutdown hook.
 */
public final class LocalNode extends Node {

    /** The line the Python launcher waits for; keep in sync with local_node.py. */
    public static final String STARTED_MARKER = "COGR_NODE_STARTED";

    static final String NODE_NAME = "cogr-local-node";
    static final String DEFAULT_CLUSTER_NAME = "cogr-local";
    static final int DEFAULT_HTTP_PORT = 9200;
    static final String HOST = "127.0.0.1";

    /** Written at the top of the log4j2.properties we generate, so we know we may refresh it. */
    static final String LOG_CONFIG_MARKER = "# Written by cogr-search LocalNode";

    /*
     * LogConfigurator.configure replaces System.out and System.err with streams that feed
     * log4j, so the started marker and our one-line errors would end up in the log file.
     * Keep the process's real streams from before that.
     */
    private static final PrintStream STDOUT = System.out;
    private static final PrintStream STDERR = System.err;

    /** Exit status for bad command-line arguments. */
    static final int EXIT_USAGE = 64;
    /** Exit status when the HTTP or transport port is taken. */
    static final int EXIT_PORT_IN_USE = 3;
    /** Exit status for any other start failure. */
    static final int EXIT_START_FAILED = 1;

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

    /** Parsed command line. */
    record Options(Path home, int httpPort, int transportPort, String clusterName) {
    }

    /** A start failure that must be reported as one line and a given exit status. */
    static final class StartFailure extends Exception {
        final int exitStatus;

        StartFailure(String message, int exitStatus) {
            super(message);
            this.exitStatus = exitStatus;
        }
    }

    public static void main(String[] args) {
        Options options;
        try {
            options = parseArgs(args);
        } catch (IllegalArgumentException e) {
            STDERR.println("local-node: " + e.getMessage() + " (usage: " + usage() + ")");
            System.exit(EXIT_USAGE);
            return;
        }
        if (options == null) {
            STDOUT.println("usage: " + usage());
            return;
        }
        try {
            run(options);
        } catch (StartFailure e) {
            STDERR.println("local-node: " + oneLine(e.getMessage()));
            STDERR.flush();
            System.exit(e.exitStatus);
        } catch (Throwable t) {
            STDERR.println("local-node: failed to start: " + describe(t));
            STDERR.flush();
            System.exit(EXIT_START_FAILED);
        }
    }

    static String usage() {
        return "LocalNode --home DIR [--http-port N (default 9200)] [--transport-port N (default http+100)] "
            + "[--cluster-name NAME (default cogr-local)]";
    }

    /** Returns null for --help. Accepts both "--opt value" and "--opt=value". */
    static Options parseArgs(String[] args) {
        Path home = null;
        int httpPort = DEFAULT_HTTP_PORT;
        Integer transportPort = null;
        String clusterName = DEFAULT_CLUSTER_NAME;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("-h") || arg.equals("--help")) {
                return null;
            }
            String name = arg;
            String value = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            }
            if (!List.of("--home", "--http-port", "--transport-port", "--cluster-name").contains(name)) {
                throw new IllegalArgumentException("unknown argument " + arg);
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(name + " needs a value");
                }
                value = args[++i];
            }
            switch (name) {
                case "--home" -> home = Path.of(value);
                case "--http-port" -> httpPort = parsePort(name, value);
                case "--transport-port" -> transportPort = parsePort(name, value);
                case "--cluster-name" -> {
                    if (value.isBlank()) {
                        throw new IllegalArgumentException("--cluster-name must not be empty");
                    }
                    clusterName = value;
                }
                default -> throw new IllegalStateException(name);
            }
        }
        if (home == null) {
            throw new IllegalArgumentException("--home is required");
        }
        int transport = transportPort != null ? transportPort : httpPort + 100;
        if (transport > 65535) {
            throw new IllegalArgumentException("default transport port " + transport + " is out of range; pass --transport-port");
        }
        if (transport == httpPort) {
            throw new IllegalArgumentException("--transport-port must differ from --http-port");
        }
        return new Options(home.toAbsolutePath().normalize(), httpPort, transport, clusterName);
    }

    private static int parsePort(String name, String value) {
        int port;
        try {
            port = Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a number, got '" + value + "'");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException(name + " must be between 1 and 65535, got " + port);
        }
        return port;
    }

    static void run(Options options) throws Exception {
        // Logging must survive until the node is closed by our own shutdown hook, so log4j's
        // hook is disabled (as OpenSearch's Bootstrap does) and we shut log4j down last.
        System.setProperty("log4j.shutdownHookEnabled", "false");
        System.setProperty("log4j2.disable.jmx", "true");
        LogConfigurator.registerErrorListener();

        Path home = options.home();
        Path config = home.resolve("config");
        Path data = home.resolve("data");
        Path logs = home.resolve("logs");
        try {
            for (Path dir : List.of(config, data, logs, home.resolve("plugins"), home.resolve("modules"))) {
                Files.createDirectories(dir);
            }
            writeLogConfig(config);
        } catch (IOException e) {
            throw new StartFailure("cannot prepare home " + home + ": " + describe(e), EXIT_START_FAILED);
        }

        // Fail fast, before the expensive node construction, with a clear message.
        ensurePortFree(options.httpPort(), "HTTP");
        ensurePortFree(options.transportPort(), "transport");

        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", data.toString())
            .put("path.logs", logs.toString())
            .put("cluster.name", options.clusterName())
            .put("node.name", NODE_NAME)
            .put("network.host", HOST)
            .put("http.port", options.httpPort())
            .put("transport.port", options.transportPort())
            .put("discovery.type", "single-node")
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            // One node cannot host replicas: without this every index created without an
            // explicit replica count would leave the cluster yellow forever.
            .put("cluster.default_number_of_replicas", 0)
            .build();
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), config, () -> NODE_NAME);
        // The %node_name log pattern fails unless the node name is known before configure.
        LogConfigurator.setNodeName(NODE_NAME);
        LogConfigurator.configure(environment);

        CountDownLatch stopped = new CountDownLatch(1);
        LocalNode node = new LocalNode(environment, CLASSPATH_PLUGINS);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> shutdown(node, stopped), "cogr-local-node-shutdown"));

        try {
            node.start();
        } catch (Exception e) {
            // Someone may have taken a port between our check and the bind.
            if (hasCause(e, BindHttpException.class)) {
                throw new StartFailure(
                    "port " + options.httpPort() + " on " + HOST + " is already in use (HTTP)", EXIT_PORT_IN_USE);
            }
            if (hasCause(e, BindTransportException.class)) {
                throw new StartFailure(
                    "port " + options.transportPort() + " on " + HOST + " is already in use (transport)", EXIT_PORT_IN_USE);
            }
            throw e;
        }

        TransportAddress http = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress();
        STDOUT.println(STARTED_MARKER + " http://" + HOST + ":" + http.getPort());
        STDOUT.flush();

        // Node's own threads keep the JVM alive too, but do not rely on that: this non-daemon
        // thread (as in OpenSearch's Bootstrap) waits until the shutdown hook has finished.
        Thread keepAlive = new Thread(() -> {
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "cogr-local-node-keepalive");
        keepAlive.setDaemon(false);
        keepAlive.start();
    }

    /** Closes the node (flushing shards and releasing the data-path lock), then log4j. */
    private static void shutdown(Node node, CountDownLatch stopped) {
        try {
            node.close();
            if (!node.awaitClose(30, TimeUnit.SECONDS)) {
                STDERR.println("local-node: node did not close within 30s");
            }
        } catch (Exception e) {
            STDERR.println("local-node: error while closing the node: " + describe(e));
        } finally {
            LoggerContext context = (LoggerContext) LogManager.getContext(false);
            Configurator.shutdown(context);
            stopped.countDown();
        }
    }

    private static void ensurePortFree(int port, String what) throws StartFailure {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
        } catch (BindException e) {
            throw new StartFailure("port " + port + " on " + HOST + " is already in use (" + what + ")", EXIT_PORT_IN_USE);
        } catch (IOException e) {
            throw new StartFailure("cannot bind " + what + " port " + port + " on " + HOST + ": " + describe(e), EXIT_PORT_IN_USE);
        }
    }

    /**
     * Writes config/log4j2.properties from the template in this jar, unless the user put
     * their own file there (one without our marker line).
     */
    private static void writeLogConfig(Path config) throws IOException {
        Path target = config.resolve("log4j2.properties");
        if (Files.exists(target)) {
            String existing = Files.readString(target, StandardCharsets.UTF_8);
            if (!existing.startsWith(LOG_CONFIG_MARKER)) {
                return;
            }
        }
        try (InputStream in = LocalNode.class.getResourceAsStream("/cogr-local-node/log4j2.properties")) {
            if (in == null) {
                throw new IOException("log4j2.properties template missing from local-node.jar");
            }
            Files.write(target, in.readAllBytes());
        }
    }

    private static boolean hasCause(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    /** The innermost useful message of an exception chain, on one line. */
    static String describe(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String top = t.getClass().getSimpleName() + ": " + t.getMessage();
        if (root != t) {
            top += " (caused by " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
        }
        return oneLine(top);
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.replaceAll("\\s*[\\r\\n]+\\s*", " ").trim();
    }
}
