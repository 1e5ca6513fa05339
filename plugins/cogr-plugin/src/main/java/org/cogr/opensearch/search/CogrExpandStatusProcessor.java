/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.search;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.opensearch.action.search.SearchRequest;
import org.opensearch.action.search.SearchResponse;
import org.opensearch.action.search.SearchResponseSections;
import org.opensearch.search.SearchExtBuilder;
import org.opensearch.search.pipeline.AbstractProcessor;
import org.opensearch.search.pipeline.PipelineProcessingContext;
import org.opensearch.search.pipeline.Processor;
import org.opensearch.search.pipeline.SearchResponseProcessor;
import org.opensearch.search.profile.SearchProfileShardResults;

/**
 * Search response processor {@code cogr_expand_status}: copies what {@code cogr_expand} did
 * with the request into the response as {@code ext.cogr} ({@code expanded}, {@code fallback},
 * {@code reason}, {@code model}, the query keywords), so that an app can tell an expanded
 * answer from a fallback. A request processor cannot touch the response itself, hence this
 * companion; without a {@code cogr_expand} before it, it leaves the response alone.
 */
public final class CogrExpandStatusProcessor extends AbstractProcessor implements SearchResponseProcessor {

    public static final String TYPE = "cogr_expand_status";

    CogrExpandStatusProcessor(String tag, String description, boolean ignoreFailure) {
        super(tag, description, ignoreFailure);
    }

    @Override
    public String getType() {
        return TYPE;
    }

    @Override
    public SearchResponse processResponse(SearchRequest request, SearchResponse response) {
        return response;
    }

    @Override
    @SuppressWarnings("unchecked")
    public SearchResponse processResponse(SearchRequest request, SearchResponse response, PipelineProcessingContext context) {
        Object status = context.getAttribute(CogrExpandRequestProcessor.STATUS_ATTRIBUTE);
        if (!(status instanceof Map<?, ?> map)) {
            return response;
        }
        SearchResponseSections sections = response.getInternalResponse();
        List<SearchExtBuilder> ext = new ArrayList<>(sections.getSearchExtBuilders());
        ext.add(new CogrExpansionExt((Map<String, Object>) map));
        var profile = response.getProfileResults();
        SearchResponseSections withExt = new SearchResponseSections(
            sections.hits(),
            sections.aggregations(),
            sections.suggest(),
            sections.timedOut(),
            sections.terminatedEarly(),
            profile == null || profile.isEmpty() ? null : new SearchProfileShardResults(profile),
            sections.getNumReducePhases(),
            ext,
            sections.getProcessorResult()
        );
        return new SearchResponse(
            withExt,
            response.getScrollId(),
            response.getTotalShards(),
            response.getSuccessfulShards(),
            response.getSkippedShards(),
            response.getTook().millis(),
            response.getPhaseTook(),
            response.getShardFailures(),
            response.getClusters(),
            response.pointInTimeId()
        );
    }

    /** No options. */
    public static final class Factory implements Processor.Factory<SearchResponseProcessor> {
        @Override
        public SearchResponseProcessor create(
            Map<String, Processor.Factory<SearchResponseProcessor>> processorFactories,
            String tag,
            String description,
            boolean ignoreFailure,
            Map<String, Object> config,
            Processor.PipelineContext pipelineContext
        ) {
            return new CogrExpandStatusProcessor(tag, description, ignoreFailure);
        }
    }
}
