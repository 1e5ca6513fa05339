/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.ingest;

import org.cogr.opensearch.DocumentFields;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.cogr.opensearch.CogrSettings;
import org.cogr.opensearch.keywords.KeywordNormalizer;
import org.cogr.opensearch.service.Expansion;
import org.cogr.opensearch.service.Expander;
import org.cogr.opensearch.student.StudentConfig;
import org.cogr.opensearch.student.StudentStore;
import org.cogr.opensearch.service.ItemText;
import org.cogr.opensearch.service.ResumeOnNode;
import org.cogr.opensearch.service.ServiceConfig;
import org.cogr.opensearch.service.ServiceHttp;
import org.opensearch.OpenSearchStatusException;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.ingest.AbstractBatchingProcessor;
import org.opensearch.ingest.ConfigurationUtils;
import org.opensearch.ingest.IngestDocument;
import org.opensearch.ingest.IngestDocumentWrapper;

/**
 * Ingest processor {@code cogr_keywords}: fills {@code cogr_keywords} (the item's keywords
 * plus its normalized title, DESIGN.md section 1) and the provenance fields
 * {@code cogr_round}, {@code cogr_model}, {@code cogr_updated_at} from the expansion
 * service's item route, one call per batch of {@code batch_size} documents.
 *
 * <p>Documents whose {@code cogr_model} already equals the service's current model (and that
 * carry {@code cogr_keywords}) are passed through untouched and not sent: re-running a
 * reindex or update-by-query through the pipeline only pays for what changed. The current
 * model is learned from {@code GET /health} (re-checked every {@link #MODEL_RECHECK_NANOS})
 * and from every item answer.
 *
 * <p>Failures: a batch whose call fails or times out marks exactly the documents of that
 * batch, in their order, with the reason (HTTP 503 on the bulk item); none is dropped or
 * half-written. With {@code ignore_failure} they are indexed without keywords instead, and
 * since they carry no {@code cogr_model}, a later run through the pipeline enriches them.
 */
public final class CogrKeywordsProcessor extends AbstractBatchingProcessor {

    public static final String TYPE = "cogr_keywords";


    /** How long a model tag learned from the service is trusted before /health is asked again. */
    static final long MODEL_RECHECK_NANOS = 10_000_000_000L;

    private final Expander client;
    private final TimeValue timeout;
    private final String titleField;
    private final String descriptionField;
    private final String idField;
    private final int kMax;
    private final ResumeOnNode resumeOnNode;
    private final LongSupplier nanoClock;

    /** The last model tag the service reported, and when (nanoTime); null until known. */
    private volatile ModelSeen modelSeen;

    private record ModelSeen(String model, long atNanos) {
    }

    CogrKeywordsProcessor(
        String tag,
        String description,
        int batchSize,
        Expander client,
        TimeValue timeout,
        String titleField,
        String descriptionField,
        String idField,
        int kMax,
        ResumeOnNode resumeOnNode,
        LongSupplier nanoClock
    ) {
        super(tag, description, batchSize);
        this.client = client;
        this.timeout = timeout;
        this.titleField = titleField;
        this.descriptionField = descriptionField;
        this.idField = idField;
        this.kMax = kMax;
        this.resumeOnNode = resumeOnNode;
        this.nanoClock = nanoClock;
    }

    @Override
    public String getType() {
        return TYPE;
    }

    /** Only the asynchronous paths are supported: a network call must not block an ingest thread. */
    @Override
    public IngestDocument execute(IngestDocument ingestDocument) {
        throw new UnsupportedOperationException("[" + TYPE + "] runs asynchronously only");
    }

    /** One document (an index request outside a bulk, or _simulate): a batch of one. */
    @Override
    public void execute(IngestDocument ingestDocument, BiConsumer<IngestDocument, Exception> handler) {
        subBatchExecute(List.of(IngestDocuments.single(ingestDocument)), results -> {
            IngestDocumentWrapper result = results.get(0);
            if (result.getException() != null) {
                handler.accept(null, result.getException());
            } else {
                handler.accept(result.getIngestDocument(), null);
            }
        });
    }

    @Override
    protected void subBatchExecute(List<IngestDocumentWrapper> wrappers, Consumer<List<IngestDocumentWrapper>> handler) {
        if (wrappers.isEmpty()) {
            handler.accept(wrappers);
            return;
        }
        ResumeOnNode.Resumer resumer = resumeOnNode.capture();
        resumer.when(currentModel(), (model, ignored) -> enrich(wrappers, model, resumer, handler));
    }

    /** The service's model: the recent one we know, else asked from /health (null if that fails). */
    private CompletableFuture<String> currentModel() {
        ModelSeen seen = modelSeen;
        if (seen != null && nanoClock.getAsLong() - seen.atNanos() < MODEL_RECHECK_NANOS) {
            return CompletableFuture.completedFuture(seen.model());
        }
        return client.model(timeout).handle((model, error) -> {
            if (error != null || model == null) {
                return null;  // unknown: every document is sent, and the answer tells us
            }
            remember(model);
            return model;
        });
    }

    private void remember(String model) {
        if (model != null) {
            modelSeen = new ModelSeen(model, nanoClock.getAsLong());
        }
    }

    /**
     * Sends the documents that need keywords in one call and answers with new wrappers, one
     * per input in input order. The input wrappers are never modified: with
     * {@code ignore_failure}, OpenSearch continues with the originals of failed documents.
     */
    private void enrich(
        List<IngestDocumentWrapper> wrappers,
        String model,
        ResumeOnNode.Resumer resumer,
        Consumer<List<IngestDocumentWrapper>> handler
    ) {
        Exception[] errors = new Exception[wrappers.size()];
        List<Integer> toSend = new ArrayList<>();
        List<ItemText> items = new ArrayList<>();
        for (int i = 0; i < wrappers.size(); i++) {
            IngestDocumentWrapper wrapper = wrappers.get(i);
            IngestDocument doc = wrapper.getIngestDocument();
            errors[i] = wrapper.getException();
            if (errors[i] != null || doc == null || isCurrent(doc, model)) {
                continue;
            }
            String title = text(doc, titleField);
            if (title.isBlank()) {
                // The item route requires a title; one such document must not fail its whole batch.
                errors[i] = new OpenSearchStatusException(
                    "[" + TYPE + "]" + tagText() + " document has no [" + titleField + "] text to generate keywords from",
                    RestStatus.BAD_REQUEST
                );
                continue;
            }
            toSend.add(i);
            items.add(new ItemText(itemId(doc, wrapper.getSlot()), title, text(doc, descriptionField)));
        }
        if (toSend.isEmpty()) {
            handler.accept(results(wrappers, errors));
            return;
        }
        resumer.when(client.expandItems(items, timeout), (expansion, error) -> {
            if (error != null) {
                Exception failure = batchFailure(toSend.size(), error);
                for (int i : toSend) {
                    errors[i] = failure;
                }
            } else {
                remember(expansion.model());
                fill(wrappers, toSend, expansion);
            }
            handler.accept(results(wrappers, errors));
        });
    }

    private static List<IngestDocumentWrapper> results(List<IngestDocumentWrapper> wrappers, Exception[] errors) {
        List<IngestDocumentWrapper> out = new ArrayList<>(wrappers.size());
        for (int i = 0; i < wrappers.size(); i++) {
            out.add(IngestDocuments.withError(wrappers.get(i), errors[i]));
        }
        return out;
    }

    /** Already enriched by the model the service runs now: nothing to do. */
    private static boolean isCurrent(IngestDocument doc, String model) {
        if (model == null) {
            return false;
        }
        Object docModel = doc.getFieldValue(DocumentFields.MODEL, Object.class, true);
        return model.equals(docModel) && doc.hasField(DocumentFields.KEYWORDS);
    }

    private void fill(List<IngestDocumentWrapper> wrappers, List<Integer> sent, Expansion expansion) {
        String now = OffsetDateTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.SECONDS).format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
        for (int k = 0; k < sent.size(); k++) {
            IngestDocument doc = wrappers.get(sent.get(k)).getIngestDocument();
            List<String> keywords = KeywordNormalizer.representation(expansion.keywords().get(k), text(doc, titleField), kMax);
            doc.setFieldValue(DocumentFields.KEYWORDS, keywords);
            if (expansion.round() != null) {
                doc.setFieldValue(DocumentFields.ROUND, expansion.round());
            }
            if (expansion.model() != null) {
                doc.setFieldValue(DocumentFields.MODEL, expansion.model());
            }
            doc.setFieldValue(DocumentFields.UPDATED_AT, now);
        }
    }

    /** The one-line reason every document of a failed batch gets (HTTP 503 on its bulk item). */
    private Exception batchFailure(int size, Throwable error) {
        Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null ? error.getCause() : error;
        String reason = "[" + TYPE + "]" + tagText() + " batch of " + size + " documents not enriched: " + cause.getMessage();
        return new OpenSearchStatusException(reason, RestStatus.SERVICE_UNAVAILABLE);
    }

    private String tagText() {
        return tag == null ? "" : " [" + tag + "]";
    }

    private static String text(IngestDocument doc, String field) {
        Object value = doc.getFieldValue(field, Object.class, true);
        return value == null ? "" : value.toString();
    }

    private String itemId(IngestDocument doc, int slot) {
        Object id = doc.getFieldValue(idField, Object.class, true);
        if (id == null) {
            id = doc.getFieldValue(IngestDocument.Metadata.ID.getFieldName(), Object.class, true);
        }
        return id == null ? "slot-" + slot : id.toString();
    }

    /**
     * Parses and validates the processor config. {@code batch_size} is read by
     * {@link AbstractBatchingProcessor.Factory}; the rest here. Errors name the processor type,
     * tag and property (OpenSearch configuration exceptions).
     */
    public static final class Factory extends AbstractBatchingProcessor.Factory {

        public static final String TITLE_FIELD = "title_field";
        public static final String DESCRIPTION_FIELD = "description_field";
        public static final String ID_FIELD = "id_field";
        public static final String K_MAX = "k_max";

        private final ServiceHttp http;
        private final Settings settings;
        private final ResumeOnNode resumeOnNode;
        private final Supplier<StudentStore> students;

        public Factory(ServiceHttp http, Settings settings, ResumeOnNode resumeOnNode, Supplier<StudentStore> students) {
            super(TYPE);
            this.http = http;
            this.settings = settings;
            this.resumeOnNode = resumeOnNode;
            this.students = students;
        }

        @Override
        protected AbstractBatchingProcessor newProcessor(String tag, String description, int batchSize, Map<String, Object> config) {
            Expander expander = StudentConfig.expander(TYPE, tag, config, students, settings, http, CogrSettings.SERVICE_URL);
            TimeValue timeout = ServiceConfig.timeout(TYPE, tag, config, settings, CogrSettings.INGEST_TIMEOUT);
            String title = ConfigurationUtils.readStringProperty(TYPE, tag, config, TITLE_FIELD, "title");
            String desc = ConfigurationUtils.readStringProperty(TYPE, tag, config, DESCRIPTION_FIELD, "description");
            String id = ConfigurationUtils.readStringProperty(TYPE, tag, config, ID_FIELD, "id");
            int kMax = ServiceConfig.positiveInt(TYPE, tag, config, K_MAX, KeywordNormalizer.DEFAULT_K_MAX, 1);
            return new CogrKeywordsProcessor(
                tag,
                description,
                batchSize,
                expander,
                timeout,
                title,
                desc,
                id,
                kMax,
                resumeOnNode,
                System::nanoTime
            );
        }
    }
}
