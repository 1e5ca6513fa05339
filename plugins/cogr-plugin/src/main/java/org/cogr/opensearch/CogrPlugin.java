/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch;

import java.util.List;
import java.util.Map;

import org.cogr.opensearch.ingest.CogrKeywordsProcessor;
import org.cogr.opensearch.search.CogrExpandRequestProcessor;
import org.cogr.opensearch.search.CogrExpandStatusProcessor;
import org.cogr.opensearch.service.ResumeOnNode;
import org.cogr.opensearch.service.ServiceHttp;
import org.opensearch.common.settings.Setting;
import org.opensearch.ingest.Processor;
import org.opensearch.plugins.IngestPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.SearchPipelinePlugin;
import org.opensearch.search.pipeline.SearchRequestProcessor;
import org.opensearch.search.pipeline.SearchResponseProcessor;

/**
 * Entry point of the cogr-search plugin (DESIGN.md section 5); it only registers.
 *
 * <ul>
 *   <li>ingest processor {@code cogr_keywords} ({@link CogrKeywordsProcessor}),</li>
 *   <li>search request processor {@code cogr_expand} ({@link CogrExpandRequestProcessor}),</li>
 *   <li>search response processor {@code cogr_expand_status} ({@link CogrExpandStatusProcessor}),</li>
 *   <li>the node settings in {@link CogrSettings}.</li>
 * </ul>
 *
 * <p>OpenSearch instantiates classpath plugins reflectively and requires exactly one public
 * constructor taking {@code ()}, {@code (Settings)} or {@code (Settings, Path)}.
 */
public class CogrPlugin extends Plugin implements IngestPlugin, SearchPipelinePlugin {

    /** One HTTP client for all processors of this node. */
    private final ServiceHttp http = new ServiceHttp();

    /** Public no-arg constructor, as OpenSearch's PluginsService requires. */
    public CogrPlugin() {
    }

    @Override
    public List<Setting<?>> getSettings() {
        return CogrSettings.all();
    }

    @Override
    public Map<String, Processor.Factory> getProcessors(Processor.Parameters parameters) {
        ResumeOnNode resume = new ResumeOnNode(parameters.threadContext, parameters.genericExecutor);
        return Map.of(CogrKeywordsProcessor.TYPE, new CogrKeywordsProcessor.Factory(http, parameters.env.settings(), resume));
    }

    @Override
    public Map<String, org.opensearch.search.pipeline.Processor.Factory<SearchRequestProcessor>> getRequestProcessors(
        SearchPipelinePlugin.Parameters parameters
    ) {
        ResumeOnNode resume = new ResumeOnNode(parameters.threadContext, parameters.genericExecutor);
        return Map.of(
            CogrExpandRequestProcessor.TYPE,
            new CogrExpandRequestProcessor.Factory(http, parameters.env.settings(), resume)
        );
    }

    @Override
    public Map<String, org.opensearch.search.pipeline.Processor.Factory<SearchResponseProcessor>> getResponseProcessors(
        SearchPipelinePlugin.Parameters parameters
    ) {
        return Map.of(CogrExpandStatusProcessor.TYPE, new CogrExpandStatusProcessor.Factory());
    }
}
