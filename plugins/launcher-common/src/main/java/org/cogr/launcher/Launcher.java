/*
 * cogr-search: what every local node launcher does the same way, whatever the engine.
 */
package org.cogr.launcher;

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
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * The protocol between a local node launcher and the Python side
 * ({@code cogr_search.opensearch.local_node}), and the steps around the engine-specific
 * node construction: argument parsing, the home layout, port checks, the log config
 * template, the started line, one-line errors with fixed exit statuses, and keeping the
 * JVM alive until the shutdown hook has closed the node.
 *
 * <p>Once the node has started, exactly one line {@code COGR_NODE_STARTED http://127.0.0.1:<port>}
 * is printed on stdout; every failure to start exits non-zero with one line on stderr.
 */
public final class Launcher {

    /** The line the Python launcher waits for; keep in sync with local_node.py. */
    public static final String STARTED_MARKER = "COGR_NODE_STARTED";
    public static final String HOST = "127.0.0.1";
    public static final String NODE_NAME = "cogr-local-node";

    /** Written at the top of the log4j2.properties we generate, so we know we may refresh it. */
    public static final String LOG_CONFIG_MARKER = "# Written by cogr-search LocalNode";

    /** {@code -Dcogr.launcher.trace=true} prints the stack trace of a failed start before its one line. */
    public static final String TRACE_PROPERTY = "cogr.launcher.trace";

    /** Exit status for bad command-line arguments. */
    public static final int EXIT_USAGE = 64;
    /** Exit status when the HTTP or transport port is taken. */
    public static final int EXIT_PORT_IN_USE = 3;
    /** Exit status for any other start failure. */
    public static final int EXIT_START_FAILED = 1;

    /*
     * Both engines' LogConfigurator.configure replace System.out and System.err with
     * streams that feed log4j, so the started marker and our one-line errors would end up
     * in the log file. Keep the process's real streams from before that: this class is
     * loaded by main() before any logging is configured.
     */
    public static final PrintStream STDOUT = System.out;
    public static final PrintStream STDERR = System.err;

    /** The engine-specific part: build and start the node; return the bound HTTP port. */
    @FunctionalInterface
    public interface NodeStarter {
        /**
         * Starts the node described by {@code options} (home prepared, ports checked) and
         * registers {@code onShutdown} work through {@link #closeOnShutdown}.
         */
        int start(LaunchOptions options) throws Exception;
    }

    private Launcher() {
    }

    /**
     * The whole life of a launcher process: parse {@code args}, prepare the home (with
     * the log config template {@code logTemplate}, a resource of {@code owner}), check
     * the ports, start the node, print the started line, and keep the JVM alive.
     */
    public static void main(String program, String[] args, Class<?> owner, String logTemplate, NodeStarter starter) {
        LaunchOptions options;
        try {
            options = LaunchOptions.parse(args);
        } catch (IllegalArgumentException e) {
            STDERR.println(program + ": " + e.getMessage() + " (usage: " + LaunchOptions.usage(program) + ")");
            System.exit(EXIT_USAGE);
            return;
        }
        if (options == null) {
            STDOUT.println("usage: " + LaunchOptions.usage(program));
            return;
        }
        try {
            prepareHome(options.home(), owner, logTemplate);
            // Fail fast, before the expensive node construction, with a clear message.
            ensurePortFree(options.httpPort(), "HTTP");
            ensurePortFree(options.transportPort(), "transport");
            int port = starter.start(options);
            STDOUT.println(STARTED_MARKER + " http://" + HOST + ":" + port);
            STDOUT.flush();
        } catch (StartFailure e) {
            STDERR.println(program + ": " + oneLine(e.getMessage()));
            STDERR.flush();
            System.exit(e.exitStatus());
        } catch (Throwable t) {
            if (Boolean.getBoolean(TRACE_PROPERTY)) {
                t.printStackTrace(STDERR);
            }
            STDERR.println(program + ": failed to start: " + describe(t));
            STDERR.flush();
            System.exit(EXIT_START_FAILED);
        }
    }

    /** {@code <home>/config}, where the launcher writes log4j2.properties. */
    public static Path configDir(Path home) {
        return home.resolve("config");
    }

    /**
     * Creates config/, data/, logs/ and the empty plugins/ and modules/ under the home
     * (the engines' PluginsService scans them; empty, no jar-hell check of plugin bundles
     * runs) and writes the log config.
     */
    static void prepareHome(Path home, Class<?> owner, String logTemplate) throws StartFailure {
        try {
            for (String dir : List.of("config", "data", "logs", "plugins", "modules")) {
                Files.createDirectories(home.resolve(dir));
            }
            writeLogConfig(configDir(home), owner, logTemplate);
        } catch (IOException e) {
            throw new StartFailure("cannot prepare home " + home + ": " + describe(e), EXIT_START_FAILED);
        }
    }

    /**
     * Writes config/log4j2.properties from the template resource, unless the user put
     * their own file there (one without our marker line).
     */
    static void writeLogConfig(Path config, Class<?> owner, String template) throws IOException {
        Path target = config.resolve("log4j2.properties");
        if (Files.exists(target)) {
            String existing = Files.readString(target, StandardCharsets.UTF_8);
            if (!existing.startsWith(LOG_CONFIG_MARKER)) {
                return;
            }
        }
        try (InputStream in = owner.getResourceAsStream(template)) {
            if (in == null) {
                throw new IOException("log4j2.properties template " + template + " missing from the launcher jar");
            }
            Files.write(target, in.readAllBytes());
        }
    }

    /** Throws a port-in-use StartFailure unless 127.0.0.1:{@code port} can be bound now. */
    public static void ensurePortFree(int port, String what) throws StartFailure {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
        } catch (BindException e) {
            throw portInUse(port, what);
        } catch (IOException e) {
            throw new StartFailure("cannot bind " + what + " port " + port + " on " + HOST + ": " + describe(e), EXIT_PORT_IN_USE);
        }
    }

    /** The failure for a port someone else holds (also when it was taken after our check). */
    public static StartFailure portInUse(int port, String what) {
        return new StartFailure("port " + port + " on " + HOST + " is already in use (" + what + ")", EXIT_PORT_IN_USE);
    }

    /**
     * Runs {@code close} on SIGTERM (through a shutdown hook) and keeps the JVM alive until
     * it has finished: the engines' own threads keep it alive too, but this non-daemon
     * thread (as in both engines' Bootstrap) does not rely on that.
     */
    public static void closeOnShutdown(String name, Runnable close) {
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                close.run();
            } finally {
                stopped.countDown();
            }
        }, name + "-shutdown"));
        Thread keepAlive = new Thread(() -> {
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, name + "-keepalive");
        keepAlive.setDaemon(false);
        keepAlive.start();
    }

    public static boolean hasCause(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    /** The innermost useful message of an exception chain, on one line. */
    public static String describe(Throwable t) {
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

    public static String oneLine(String s) {
        return s == null ? "" : s.replaceAll("\\s*[\\r\\n]+\\s*", " ").trim();
    }
}
