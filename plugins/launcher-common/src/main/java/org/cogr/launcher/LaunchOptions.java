/*
 * cogr-search: the command line shared by the local node launchers.
 */
package org.cogr.launcher;

import java.nio.file.Path;
import java.util.List;

/**
 * The parsed command line of a local node launcher: the same flags for every engine, so
 * that the Python side ({@code cogr_search.opensearch.local_node}) starts all of them alike.
 */
public record LaunchOptions(Path home, int httpPort, int transportPort, String clusterName) {

    public static final int DEFAULT_HTTP_PORT = 9200;
    public static final String DEFAULT_CLUSTER_NAME = "cogr-local";
    /** The transport port defaults to the HTTP port plus this; local_node.py relies on it. */
    public static final int TRANSPORT_OFFSET = 100;

    private static final List<String> NAMES = List.of("--home", "--http-port", "--transport-port", "--cluster-name");

    public static String usage(String program) {
        return program + " --home DIR [--http-port N (default " + DEFAULT_HTTP_PORT + ")] "
            + "[--transport-port N (default http+" + TRANSPORT_OFFSET + ")] "
            + "[--cluster-name NAME (default " + DEFAULT_CLUSTER_NAME + ")]";
    }

    /**
     * Returns null for --help. Accepts both "--opt value" and "--opt=value".
     *
     * @throws IllegalArgumentException with a one-line reason for a bad command line
     */
    public static LaunchOptions parse(String[] args) {
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
            if (!NAMES.contains(name)) {
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
        int transport = transportPort != null ? transportPort : httpPort + TRANSPORT_OFFSET;
        if (transport > 65535) {
            throw new IllegalArgumentException("default transport port " + transport + " is out of range; pass --transport-port");
        }
        if (transport == httpPort) {
            throw new IllegalArgumentException("--transport-port must differ from --http-port");
        }
        return new LaunchOptions(home.toAbsolutePath().normalize(), httpPort, transport, clusterName);
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
}
