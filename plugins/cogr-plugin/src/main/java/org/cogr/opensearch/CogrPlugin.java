/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.cogr.opensearch.ingest.CogrKeywordsProcessor;
import org.cogr.opensearch.search.CogrExpandRequestProcessor;
import org.cogr.opensearch.search.CogrExpandStatusProcessor;
import org.cogr.opensearch.service.ResumeOnNode;
import org.cogr.opensearch.service.ServiceHttp;
import org.cogr.opensearch.service.ServiceTrust;
import org.opensearch.common.settings.Setting;
import org.opensearch.common.settings.Settings;
import org.opensearch.core.common.settings.SecureString;
import org.opensearch.ingest.Processor;
import org.opensearch.plugins.IngestPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.ReloadablePlugin;
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
 * <p>OpenSearch instantiates plugins reflectively and requires exactly one public
 * constructor taking {@code ()}, {@code (Settings)} or {@code (Settings, Path)}; this one
 * takes the node's settings (with its keystore) and config folder, for the service's token
 * ({@code plugins.cogr.service_token}) and CA ({@code plugins.cogr.service_ca}).
 * {@link ReloadablePlugin}: {@code POST _nodes/reload_secure_settings} replaces the token.
 */
public class CogrPlugin extends Plugin implements IngestPlugin, SearchPipelinePlugin, ReloadablePlugin {

    /** One HTTP client for all processors of this node. */
    private final ServiceHttp http;

    /** The constructor OpenSearch's PluginsService calls. */
    public CogrPlugin(Settings settings, Path configPath) {
        http = new ServiceHttp(ServiceTrust.context(CogrSettings.SERVICE_CA.getKey(), CogrSettings.SERVICE_CA.get(settings), configPath));
        reload(settings);
    }

    /** Takes the keystore's current {@code plugins.cogr.service_token} (none when absent). */
    @Override
    public final void reload(Settings settings) {
        try (SecureString token = CogrSettings.SERVICE_TOKEN.get(settings)) {
            http.token(token);
        }
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
