/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch;

import java.util.Collections;
import java.util.Map;

import org.opensearch.ingest.Processor;
import org.opensearch.plugins.IngestPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.SearchPipelinePlugin;
import org.opensearch.search.pipeline.SearchRequestProcessor;
import org.opensearch.search.pipeline.SearchResponseProcessor;

/**
 * Entry point of the cogr-search plugin.
 *
 * <p>It will contribute an ingest processor that fills {@code cogr_keywords} for documents
 * that lack them, and a search request processor that rewrites a plain {@code match} into
 * the keyword-expanded query (DESIGN.md section 5). Both come in a later change; for now
 * the plugin registers no processors, so that the local node and packaging can already
 * load it and prove the wiring.
 *
 * <p>OpenSearch instantiates classpath plugins reflectively and requires exactly one public
 * constructor taking {@code ()}, {@code (Settings)} or {@code (Settings, Path)}.
 */
public class CogrPlugin extends Plugin implements IngestPlugin, SearchPipelinePlugin {

    /** Public no-arg constructor, as OpenSearch's PluginsService requires. */
    public CogrPlugin() {
    }

    @Override
    public Map<String, Processor.Factory> getProcessors(Processor.Parameters parameters) {
        return Collections.emptyMap();
    }

    @Override
    public Map<String, org.opensearch.search.pipeline.Processor.Factory<SearchRequestProcessor>> getRequestProcessors(
        SearchPipelinePlugin.Parameters parameters
    ) {
        return Collections.emptyMap();
    }

    @Override
    public Map<String, org.opensearch.search.pipeline.Processor.Factory<SearchResponseProcessor>> getResponseProcessors(
        SearchPipelinePlugin.Parameters parameters
    ) {
        return Collections.emptyMap();
    }
}
