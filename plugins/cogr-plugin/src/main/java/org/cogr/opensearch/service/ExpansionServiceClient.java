/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.AccessController;
import java.security.PrivilegedAction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.opensearch.common.unit.TimeValue;
import org.opensearch.common.xcontent.XContentFactory;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.core.common.bytes.BytesReference;
import org.opensearch.core.xcontent.XContentBuilder;

/**
 * Asynchronous client of the cogr-search expansion service (DESIGN.md section 5):
 * {@code POST /v1/expand/query}, {@code POST /v1/expand/item} and {@code GET /health}.
 *
 * <p>Every call is bounded by a total timeout (connect, send, headers and body together) and
 * completes exceptionally with an {@link ExpansionServiceException} whose message is one
 * line naming the URL; callers decide whether that means a fallback (search) or failed
 * documents (ingest). Answers are checked against the contract: one keyword list per input.
 */
public final class ExpansionServiceClient implements Expander {

    public static final String QUERY_ROUTE = "/v1/expand/query";
    public static final String ITEM_ROUTE = "/v1/expand/item";
    public static final String HEALTH_ROUTE = "/health";

    /** Longest service error text quoted in an exception message. */
    private static final int MAX_QUOTED = 200;

    private final URI baseUrl;
    private final ServiceHttp http;

    public ExpansionServiceClient(URI baseUrl, ServiceHttp http) {
        String text = baseUrl.toString();
        this.baseUrl = URI.create(text.endsWith("/") ? text.substring(0, text.length() - 1) : text);
        this.http = http;
    }

    public URI baseUrl() {
        return baseUrl;
    }

    /** Keywords for each query text, in order. */
    public CompletableFuture<Expansion> expandQueries(List<String> texts, TimeValue timeout) {
        String body = json(builder -> {
            builder.startObject().field("texts", texts).endObject();
        });
        return post(QUERY_ROUTE, body, timeout).thenApply(map -> expansion(map, texts.size(), QUERY_ROUTE));
    }

    /** Keywords for each item, in order. */
    public CompletableFuture<Expansion> expandItems(List<ItemText> items, TimeValue timeout) {
        String body = json(builder -> {
            builder.startObject().startArray("items");
            for (ItemText item : items) {
                builder.startObject()
                    .field("id", item.id())
                    .field("title", item.title())
                    .field("description", item.description())
                    .endObject();
            }
            builder.endArray().endObject();
        });
        return post(ITEM_ROUTE, body, timeout).thenApply(map -> expansion(map, items.size(), ITEM_ROUTE));
    }

    /** The {@code model} tag the service reports on {@code /health}; null if it names none. */
    public CompletableFuture<String> model(TimeValue timeout) {
        HttpRequest request = authorized(HttpRequest.newBuilder(uri(HEALTH_ROUTE)).timeout(duration(timeout)).GET()).build();
        return send(request, HEALTH_ROUTE, timeout).thenApply(map -> {
            Object model = map.get("model");
            return model == null ? null : model.toString();
        });
    }

    private CompletableFuture<Map<String, Object>> post(String route, String body, TimeValue timeout) {
        HttpRequest request = authorized(HttpRequest.newBuilder(uri(route))
            .timeout(duration(timeout))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8)))
            .build();
        return send(request, route, timeout);
    }

    /** Adds the keystore's bearer token, when one is set (read per call: a reload takes effect at once). */
    private HttpRequest.Builder authorized(HttpRequest.Builder builder) {
        String authorization = http.authorization();
        return authorization == null ? builder : builder.header("Authorization", authorization);
    }

    private CompletableFuture<Map<String, Object>> send(HttpRequest request, String route, TimeValue timeout) {
        return sendOnce(request)
            // Expansions are pure functions of the texts, so a request lost on a pooled
            // connection the service closed as idle (uvicorn: after 5 s) while it was being
            // sent is sent once more, on a fresh connection, within the same total timeout.
            .exceptionallyCompose(error -> closedBeforeAnswer(error) ? sendOnce(request) : CompletableFuture.failedFuture(error))
            .orTimeout(timeout.millis(), TimeUnit.MILLISECONDS)
            .handle((response, error) -> {
                if (error != null) {
                    throw failure(route, error);
                }
                return decode(route, response);
            });
    }

    private CompletableFuture<HttpResponse<String>> sendOnce(HttpRequest request) {
        try {
            return AccessController.doPrivileged(
                (PrivilegedAction<CompletableFuture<HttpResponse<String>>>) () -> http.client()
                    .sendAsync(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8))
            );
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** The connection failed after it was made and before any answer: not a timeout, not a refused connect. */
    private static boolean closedBeforeAnswer(Throwable error) {
        Throwable cause = error;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause instanceof IOException && !(cause instanceof java.net.http.HttpTimeoutException)
            && !(cause instanceof java.net.ConnectException);
    }

    private Map<String, Object> decode(String route, HttpResponse<String> response) {
        String body = response.body() == null ? "" : response.body();
        if (response.statusCode() / 100 != 2) {
            throw new ExpansionServiceException(
                "expansion service " + uri(route) + " answered " + response.statusCode() + ": " + errorText(body)
            );
        }
        try {
            return XContentHelper.convertToMap(JsonXContent.jsonXContent, body, false);
        } catch (RuntimeException e) {
            throw new ExpansionServiceException("expansion service " + uri(route) + " answered a body that is not JSON", e);
        }
    }

    /** The service puts its one-line reason in {@code error} (FastAPI's own errors: {@code detail}). */
    private static String errorText(String body) {
        String text = body;
        try {
            Map<String, Object> map = XContentHelper.convertToMap(JsonXContent.jsonXContent, body, false);
            Object reason = map.containsKey("error") ? map.get("error") : map.get("detail");
            if (reason != null) {
                text = reason.toString();
            }
        } catch (RuntimeException e) {
            // not JSON: quote as is
        }
        text = text.replaceAll("\\s+", " ").trim();
        return text.length() > MAX_QUOTED ? text.substring(0, MAX_QUOTED) + "..." : text;
    }

    private ExpansionServiceException failure(String route, Throwable error) {
        Throwable cause = error;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof ExpansionServiceException e) {
            return e;
        }
        if (cause instanceof TimeoutException || cause instanceof java.net.http.HttpTimeoutException) {
            return new ExpansionServiceException("expansion service " + uri(route) + " did not answer in time", cause);
        }
        String what = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getClass().getSimpleName() + ": "
            + cause.getMessage();
        return new ExpansionServiceException("expansion service " + uri(route) + " failed: " + what, cause);
    }

    @SuppressWarnings("unchecked")
    private Expansion expansion(Map<String, Object> map, int expected, String route) {
        Object raw = map.get("keywords");
        if (!(raw instanceof List<?> lists) || lists.size() != expected) {
            int got = raw instanceof List<?> l ? l.size() : -1;
            throw new ExpansionServiceException(
                "expansion service " + uri(route) + " answered " + (got < 0 ? "no keywords list" : got + " keyword lists")
                    + " for " + expected + " inputs"
            );
        }
        List<List<String>> keywords = new ArrayList<>(expected);
        for (Object entry : lists) {
            List<String> one = new ArrayList<>();
            if (entry instanceof List<?> words) {
                for (Object word : words) {
                    if (word != null) {
                        one.add(word.toString());
                    }
                }
            }
            keywords.add(one);
        }
        Object round = map.get("round");
        Integer roundValue = round instanceof Number n ? n.intValue() : null;
        Object run = map.get("run");
        Object model = map.get("model");
        return new Expansion(keywords, run == null ? null : run.toString(), roundValue, model == null ? null : model.toString());
    }

    private URI uri(String route) {
        return URI.create(baseUrl + route);
    }

    private static Duration duration(TimeValue timeout) {
        return Duration.ofMillis(Math.max(1, timeout.millis()));
    }

    /** Builds a JSON body; XContent is what the server already ships, so no extra jar. */
    private static String json(BodyWriter writer) {
        try (XContentBuilder builder = XContentFactory.jsonBuilder()) {
            writer.write(builder);
            return BytesReference.bytes(builder).utf8ToString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FunctionalInterface
    private interface BodyWriter {
        void write(XContentBuilder builder) throws IOException;
    }
}
