/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.zip.GZIPInputStream;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.opensearch.action.search.SearchRequest;
import org.opensearch.action.search.SearchResponse;
import org.opensearch.action.support.ContextPreservingActionListener;
import org.opensearch.common.util.concurrent.ThreadContext;
import org.opensearch.core.action.ActionListener;
import org.opensearch.index.query.QueryBuilders;
import org.opensearch.search.SearchHit;
import org.opensearch.search.builder.SearchSourceBuilder;
import org.opensearch.search.sort.SortOrder;

/**
 * The node's students, loaded on first use from the chunk documents that
 * {@code index create --pipelines --run RUN} stores (as ml-commons stores model chunks), and
 * kept: one load per node and model id, shared by every processor of the node.
 *
 * <p>A model id names one version ({@code run+r<round>+student-<digest>}, the
 * {@code cogr_model} tag sync writes); a new round is a new id, which a pipeline update
 * points the processors at, and the node loads it on its first use, without a restart. The
 * few ids used last stay cached ({@link #CACHED}).
 *
 * <p>The chunks are read with the thread context stashed: the plugin reads its own index,
 * so a user who may search through the pipeline needs no right on the model index. A
 * missing, corrupt (checksum, gzip, JSON, format) or oversized model fails the future with
 * a one-line reason, logged once per attempt; a failed load is retried after
 * {@link #RETRY_NANOS}, so a model stored later is picked up.
 */
public final class StudentStore {

    private static final Logger LOGGER = LogManager.getLogger(StudentStore.class);

    /** Students kept per node; the least recently used beyond this are dropped. */
    static final int CACHED = 4;
    static final long RETRY_NANOS = 10_000_000_000L;
    /** Chunks read per model: at 1 MiB each (export.py's CHUNK_BYTES) far above any limit. */
    static final int MAX_CHUNKS = 10_000;

    /** How the store searches the chunk index (the node client's {@code search}). */
    @FunctionalInterface
    public interface ChunkSearch {
        void search(SearchRequest request, ActionListener<SearchResponse> listener);
    }

    private record Loading(CompletableFuture<Student> future, long startedNanos) {}

    private final ChunkSearch search;
    private final ThreadContext threadContext;
    private final Consumer<Runnable> executor;
    private final String index;
    private final long maxBytes;
    private final LongSupplier nanoClock;
    private final Map<String, Loading> students = new LinkedHashMap<>(16, 0.75f, true);

    public StudentStore(ChunkSearch search, ThreadContext threadContext, Consumer<Runnable> executor, String index, long maxBytes) {
        this.search = search;
        this.threadContext = threadContext;
        this.executor = executor;
        this.index = index;
        this.maxBytes = maxBytes;
        this.nanoClock = System::nanoTime;
    }

    public String index() {
        return index;
    }

    /** The student of {@code modelId}: complete at once when loaded, else loading. */
    public CompletableFuture<Student> get(String modelId) {
        synchronized (students) {
            Loading loading = students.get(modelId);
            boolean failed = loading != null && loading.future().isCompletedExceptionally();
            if (loading != null && !(failed && nanoClock.getAsLong() - loading.startedNanos() > RETRY_NANOS)) {
                return loading.future();
            }
            CompletableFuture<Student> future = new CompletableFuture<>();
            students.put(modelId, new Loading(future, nanoClock.getAsLong()));
            while (students.size() > CACHED) {
                students.remove(students.keySet().iterator().next());
            }
            load(modelId, future);
            return future;
        }
    }

    private void load(String modelId, CompletableFuture<Student> future) {
        SearchRequest request = new SearchRequest(index).source(
            new SearchSourceBuilder().query(QueryBuilders.termQuery("model_id", modelId)).sort("chunk", SortOrder.ASC).size(MAX_CHUNKS)
        );
        ActionListener<SearchResponse> listener = ActionListener.wrap(
            response -> executor.accept(() -> complete(modelId, future, () -> decode(modelId, response))),
            error -> fail(modelId, future, "cannot read index [" + index + "]: " + error.getMessage())
        );
        Supplier<ThreadContext.StoredContext> restore = threadContext.newRestorableContext(false);
        try (ThreadContext.StoredContext ignored = threadContext.stashContext()) {
            search.search(request, new ContextPreservingActionListener<>(restore, listener));
        } catch (RuntimeException e) {
            fail(modelId, future, "cannot read index [" + index + "]: " + e.getMessage());
        }
    }

    private void complete(String modelId, CompletableFuture<Student> future, Supplier<Student> decoder) {
        try {
            Student student = decoder.get();
            LOGGER.info("cogr: student [{}] loaded from [{}]", modelId, index);
            future.complete(student);
        } catch (IllegalArgumentException e) {
            fail(modelId, future, e.getMessage());
        }
    }

    private void fail(String modelId, CompletableFuture<Student> future, String reason) {
        String line = "student [" + modelId + "] not loaded: " + reason;
        LOGGER.warn("cogr: {}", line);
        future.completeExceptionally(new IllegalStateException(line));
    }

    /** The chunks in order, checked (count, size, sha256), unzipped within the limit, read. */
    private Student decode(String modelId, SearchResponse response) {
        SearchHit[] hits = response.getHits().getHits();
        if (hits.length == 0) {
            throw new IllegalArgumentException("no chunks in index [" + index + "] (store it with `cogr-search index create --pipelines --run RUN`)");
        }
        Map<String, Object> first = hits[0].getSourceAsMap();
        int chunks = ((Number) first.get("chunks")).intValue();
        long bytes = ((Number) first.get("bytes")).longValue();
        if (bytes > maxBytes) {
            throw new IllegalArgumentException("oversized: " + bytes + " bytes compressed, above plugins.cogr.student_max_bytes " + maxBytes);
        }
        if (hits.length != chunks) {
            throw new IllegalArgumentException("corrupt: " + hits.length + " of " + chunks + " chunks");
        }
        byte[] data = new byte[Math.toIntExact(bytes)];
        int at = 0;
        for (int n = 0; n < hits.length; n++) {
            Map<String, Object> source = n == 0 ? first : hits[n].getSourceAsMap();
            if (((Number) source.get("chunk")).intValue() != n) {
                throw new IllegalArgumentException("corrupt: chunk " + n + " is missing");
            }
            byte[] piece = Base64.getDecoder().decode((String) source.get("data"));
            if (at + piece.length > data.length) {
                throw new IllegalArgumentException("corrupt: the chunks hold more than " + bytes + " bytes");
            }
            System.arraycopy(piece, 0, data, at, piece.length);
            at += piece.length;
        }
        if (at != data.length) {
            throw new IllegalArgumentException("corrupt: the chunks hold " + at + " of " + bytes + " bytes");
        }
        if (!sha256(data).equals(first.get("sha256"))) {
            throw new IllegalArgumentException("corrupt: sha256 of the chunks differs from the stored one");
        }
        try (InputStream json = new LimitedInputStream(new GZIPInputStream(new ByteArrayInputStream(data)), maxBytes)) {
            return StudentReader.read(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("corrupt: " + e.getMessage(), e);
        }
    }

    static String sha256(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Fails the read past {@code limit} bytes: a small gzip may unzip to a huge export. */
    static final class LimitedInputStream extends java.io.FilterInputStream {
        private final long limit;
        private long read;

        LimitedInputStream(InputStream in, long limit) {
            super(in);
            this.limit = limit;
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                count(1);
            }
            return b;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            int n = super.read(buffer, offset, length);
            if (n > 0) {
                count(n);
            }
            return n;
        }

        private void count(int n) {
            read += n;
            if (read > limit) {
                throw new IllegalArgumentException("oversized: the export unzips to more than plugins.cogr.student_max_bytes " + limit + " bytes");
            }
        }
    }
}
