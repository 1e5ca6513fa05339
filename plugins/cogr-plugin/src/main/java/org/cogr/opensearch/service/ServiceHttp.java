/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import java.net.http.HttpClient;
import java.security.AccessController;
import java.security.PrivilegedAction;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

import javax.net.ssl.SSLContext;

/**
 * The one JDK {@link HttpClient} the plugin's processors share.
 *
 * <p>Why shared: OpenSearch re-creates processors on every pipeline change, and each JDK
 * client owns a selector thread and a connection pool; one client per node keeps
 * connections to the service alive across pipelines. It is created lazily inside
 * {@code doPrivileged}, so that on a cluster with the security manager its threads run with
 * the plugin's permissions (plugin-security.policy).
 *
 * <p>It also holds what every call to the service carries: the TLS trust
 * ({@link ServiceTrust}, fixed at node start) and the bearer token of the keystore's
 * {@code plugins.cogr.service_token}, which {@code _nodes/reload_secure_settings} replaces
 * (the next call sends the new one).
 */
public final class ServiceHttp {

    /** Threads that complete responses; parsing a response is short, so a few suffice. */
    private static final int RESPONSE_THREADS = 2;

    private final SSLContext sslContext;
    private volatile HttpClient client;
    private volatile String authorization;

    /** {@code sslContext}: the trust of https services (null: the JDK's default). */
    public ServiceHttp(SSLContext sslContext) {
        this.sslContext = sslContext;
    }

    /** No token and the JDK's trust. */
    public ServiceHttp() {
        this(null);
    }

    /** Sets the bearer token sent from now on; null or blank sends none. */
    public void token(CharSequence token) {
        authorization = token == null || token.toString().isBlank() ? null : "Bearer " + token.toString().trim();
    }

    /** The {@code Authorization} header value, or null when no token is set. */
    public String authorization() {
        return authorization;
    }

    /** The shared client, created on first use. */
    public HttpClient client() {
        HttpClient current = client;
        if (current == null) {
            synchronized (this) {
                current = client;
                if (current == null) {
                    current = AccessController.doPrivileged((PrivilegedAction<HttpClient>) () -> {
                        HttpClient.Builder builder = HttpClient.newBuilder()
                            // uvicorn speaks HTTP/1.1 only; skip the h2c upgrade attempt.
                            .version(HttpClient.Version.HTTP_1_1)
                            .connectTimeout(Duration.ofSeconds(5))
                            // The service sits next to the cluster; never route it through a proxy
                            // picked up from the environment.
                            .proxy(HttpClient.Builder.NO_PROXY)
                            .executor(responseExecutor());
                        if (sslContext != null) {
                            builder.sslContext(sslContext);
                        }
                        return builder.build();
                    });
                    client = current;
                }
            }
        }
        return current;
    }

    private static ExecutorService responseExecutor() {
        return Executors.newFixedThreadPool(RESPONSE_THREADS, daemonThreads());
    }

    /** Daemon threads made by plugin code with the plugin's permissions (see the class comment). */
    private static ThreadFactory daemonThreads() {
        AtomicInteger count = new AtomicInteger();
        return runnable -> AccessController.doPrivileged((PrivilegedAction<Thread>) () -> {
            Thread thread = new Thread(runnable, "cogr-expansion-http-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
    }
}
