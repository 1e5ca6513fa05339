/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.search;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.cogr.opensearch.CogrSettings;
import org.cogr.opensearch.keywords.KeywordNormalizer;
import org.cogr.opensearch.service.Expansion;
import org.cogr.opensearch.service.Expander;
import org.cogr.opensearch.student.StudentConfig;
import org.cogr.opensearch.student.StudentStore;
import org.cogr.opensearch.service.ResumeOnNode;
import org.cogr.opensearch.service.ServiceConfig;
import org.cogr.opensearch.service.ServiceHttp;
import org.opensearch.action.search.SearchRequest;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.core.action.ActionListener;
import org.opensearch.index.query.QueryBuilder;
import org.opensearch.ingest.ConfigurationUtils;
import org.opensearch.search.builder.SearchSourceBuilder;
import org.opensearch.search.pipeline.AbstractProcessor;
import org.opensearch.search.pipeline.PipelineProcessingContext;
import org.opensearch.search.pipeline.Processor;
import org.opensearch.search.pipeline.SearchRequestProcessor;

/**
 * Search request processor {@code cogr_expand}: rewrites an app's plain {@code match} on a
 * configured field (default {@code title}) into the keyword-expanded query of DESIGN.md
 * section 3, with the query keywords from the expansion service's query route, so that an
 * existing app only adds {@code ?search_pipeline=cogr}.
 *
 * <p>Everything else in the request (other clauses, size, from, _source, aggregations) is
 * left as the app sent it. All match texts of one request are expanded in one call; recent
 * expansions are answered from a small LRU without a call. When the service fails or does
 * not answer within {@code timeout}, the original query runs unchanged: search keeps working
 * on plain BM25. What happened is recorded for {@link CogrExpandStatusProcessor}, which puts
 * it into the response as {@code ext.cogr}.
 */
public final class CogrExpandRequestProcessor extends AbstractProcessor implements SearchRequestProcessor {

    public static final String TYPE = "cogr_expand";

    /** Key of the status map in the pipeline processing context. */
    static final String STATUS_ATTRIBUTE = "cogr_expand.status";

    private final String field;
    private final Expander client;
    private final TimeValue timeout;
    private final int kMax;
    private final ExpansionCache cache;
    private final ResumeOnNode resumeOnNode;

    CogrExpandRequestProcessor(
        String tag,
        String description,
        boolean ignoreFailure,
        String field,
        Expander client,
        TimeValue timeout,
        int kMax,
        ExpansionCache cache,
        ResumeOnNode resumeOnNode
    ) {
        super(tag, description, ignoreFailure);
        this.field = field;
        this.client = client;
        this.timeout = timeout;
        this.kMax = kMax;
        this.cache = cache;
        this.resumeOnNode = resumeOnNode;
    }

    @Override
    public String getType() {
        return TYPE;
    }

    /** Synchronous use cannot wait on the network; OpenSearch calls {@link #processRequestAsync}. */
    @Override
    public SearchRequest processRequest(SearchRequest request) {
        throw new UnsupportedOperationException("[" + TYPE + "] runs asynchronously only");
    }

    @Override
    public void processRequestAsync(SearchRequest request, PipelineProcessingContext context, ActionListener<SearchRequest> listener) {
        SearchSourceBuilder source = request.source();
        QueryBuilder query = source == null ? null : source.query();
        Set<String> texts = query == null ? Set.of() : ExpandedQuery.matchTexts(query, field);
        if (texts.isEmpty()) {
            context.setAttribute(STATUS_ATTRIBUTE, status(false, false, "no match query on [" + field + "]"));
            listener.onResponse(request);
            return;
        }
        Map<String, ExpansionCache.Entry> known = new LinkedHashMap<>();
        List<String> missing = new ArrayList<>();
        for (String text : texts) {
            ExpansionCache.Entry entry = cache.get(text);
            if (entry == null) {
                missing.add(text);
            } else {
                known.put(text, entry);
            }
        }
        if (missing.isEmpty()) {
            respond(request, source, query, known, true, context, listener);
            return;
        }
        ResumeOnNode.Resumer resumer = resumeOnNode.capture();
        resumer.when(client.expandQueries(missing, timeout), (expansion, error) -> {
            if (error != null) {
                Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
                Map<String, Object> status = status(false, true, cause.getMessage());
                context.setAttribute(STATUS_ATTRIBUTE, status);
                listener.onResponse(request);
                return;
            }
            for (int i = 0; i < missing.size(); i++) {
                String text = missing.get(i);
                List<String> keywords = expansion.keywords().get(i);
                cache.put(text, keywords, expansion.model(), expansion.round());
                known.put(text, new ExpansionCache.Entry(keywords, expansion.model(), expansion.round(), 0L));
            }
            respond(request, source, query, known, false, context, listener);
        });
    }

    private void respond(
        SearchRequest request,
        SearchSourceBuilder source,
        QueryBuilder query,
        Map<String, ExpansionCache.Entry> expansions,
        boolean cached,
        PipelineProcessingContext context,
        ActionListener<SearchRequest> listener
    ) {
        try {
            Map<String, List<String>> representations = new LinkedHashMap<>();
            List<Map<String, Object>> details = new ArrayList<>();
            String model = null;
            Integer round = null;
            for (Map.Entry<String, ExpansionCache.Entry> e : expansions.entrySet()) {
                List<String> representation = KeywordNormalizer.representation(e.getValue().keywords(), e.getKey(), kMax);
                representations.put(e.getKey(), representation);
                Map<String, Object> detail = new LinkedHashMap<>();
                detail.put("text", e.getKey());
                detail.put("keywords", representation);
                details.add(detail);
                model = e.getValue().model();
                round = e.getValue().round();
            }
            source.query(ExpandedQuery.rewrite(query, field, representations));
            Map<String, Object> status = status(true, false, null);
            status.put("cached", cached);
            status.put("model", model);
            status.put("round", round);
            status.put("queries", details);
            context.setAttribute(STATUS_ATTRIBUTE, status);
            listener.onResponse(request);
        } catch (RuntimeException e) {
            listener.onFailure(e);
        }
    }

    private Map<String, Object> status(boolean expanded, boolean fallback, String reason) {
        Map<String, Object> status = new LinkedHashMap<>();
        status.put("expanded", expanded);
        status.put("fallback", fallback);
        status.put("field", field);
        if (reason != null) {
            status.put("reason", reason);
        }
        return status;
    }

    /**
     * Parses and validates the config: {@code service_url}, {@code field} (default
     * {@code title}), {@code timeout}, {@code k_max}, {@code cache_size} (0 = off) and
     * {@code cache_ttl}. Errors name the processor type, tag and property.
     */
    public static final class Factory implements Processor.Factory<SearchRequestProcessor> {

        public static final String FIELD = "field";
        public static final String K_MAX = "k_max";
        public static final String CACHE_SIZE = "cache_size";
        public static final String CACHE_TTL = "cache_ttl";

        private final ServiceHttp http;
        private final Settings settings;
        private final ResumeOnNode resumeOnNode;
        private final Supplier<StudentStore> students;
        private final LongSupplier nanoClock;

        public Factory(ServiceHttp http, Settings settings, ResumeOnNode resumeOnNode, Supplier<StudentStore> students) {
            this.http = http;
            this.settings = settings;
            this.resumeOnNode = resumeOnNode;
            this.students = students;
            this.nanoClock = System::nanoTime;
        }

        @Override
        public SearchRequestProcessor create(
            Map<String, Processor.Factory<SearchRequestProcessor>> processorFactories,
            String tag,
            String description,
            boolean ignoreFailure,
            Map<String, Object> config,
            Processor.PipelineContext pipelineContext
        ) {
            Expander expander = StudentConfig.expander(TYPE, tag, config, students, settings, http, CogrSettings.SERVICE_URL);
            TimeValue timeout = ServiceConfig.timeout(TYPE, tag, config, settings, CogrSettings.SEARCH_TIMEOUT);
            String field = ConfigurationUtils.readStringProperty(TYPE, tag, config, FIELD, "title");
            if (field.isBlank()) {
                throw ConfigurationUtils.newConfigurationException(TYPE, tag, FIELD, "must not be empty");
            }
            int kMax = ServiceConfig.positiveInt(TYPE, tag, config, K_MAX, KeywordNormalizer.DEFAULT_K_MAX, 1);
            int cacheSize = ServiceConfig.positiveInt(TYPE, tag, config, CACHE_SIZE, 10_000, 0);
            String ttlText = ConfigurationUtils.readStringProperty(TYPE, tag, config, CACHE_TTL, "60s");
            TimeValue ttl;
            try {
                ttl = TimeValue.parseTimeValue(ttlText, CACHE_TTL);
            } catch (RuntimeException e) {
                throw ConfigurationUtils.newConfigurationException(TYPE, tag, CACHE_TTL, "is not a time value such as 60s: [" + ttlText + "]");
            }
            return new CogrExpandRequestProcessor(
                tag,
                description,
                ignoreFailure,
                field,
                expander,
                timeout,
                kMax,
                new ExpansionCache(cacheSize, ttl.nanos(), nanoClock),
                resumeOnNode
            );
        }
    }
}
