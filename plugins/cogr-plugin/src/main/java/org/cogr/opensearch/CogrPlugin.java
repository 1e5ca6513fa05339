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
import org.cogr.opensearch.student.StudentStore;
import org.opensearch.common.util.concurrent.ThreadContext;
import java.util.function.Consumer;
import java.util.function.Supplier;
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

    /** The node's stored students, made with the node client on the first factory call. */
    private volatile StudentStore students;
    private final Settings nodeSettings;

    /** The constructor OpenSearch's PluginsService calls. */
    public CogrPlugin(Settings settings, Path configPath) {
        http = new ServiceHttp(ServiceTrust.context(CogrSettings.SERVICE_CA.getKey(), CogrSettings.SERVICE_CA.get(settings), configPath));
        nodeSettings = settings;
        reload(settings);
    }

    /** Takes the keystore's current {@code plugins.cogr.service_token} (none when absent). */
    @Override
    public final void reload(Settings settings) {
        try (SecureString token = CogrSettings.SERVICE_TOKEN.get(settings)) {
            http.token(token);
        }
    }

    /** One store per node, whichever pipeline service asks first (both pass the node client). */
    private synchronized StudentStore students(StudentStore.ChunkSearch search, ThreadContext threadContext, Consumer<Runnable> executor) {
        if (students == null) {
            students = new StudentStore(
                search,
                threadContext,
                executor,
                CogrSettings.STUDENT_INDEX.get(nodeSettings),
                CogrSettings.STUDENT_MAX_BYTES.get(nodeSettings).getBytes()
            );
        }
        return students;
    }

    @Override
    public List<Setting<?>> getSettings() {
        return CogrSettings.all();
    }

    @Override
    public Map<String, Processor.Factory> getProcessors(Processor.Parameters parameters) {
        ResumeOnNode resume = new ResumeOnNode(parameters.threadContext, parameters.genericExecutor);
        StudentStore.ChunkSearch search = parameters.client::search;
        Supplier<StudentStore> store = () -> students(search, parameters.threadContext, parameters.genericExecutor);
        return Map.of(CogrKeywordsProcessor.TYPE, new CogrKeywordsProcessor.Factory(http, parameters.env.settings(), resume, store));
    }

    @Override
    public Map<String, org.opensearch.search.pipeline.Processor.Factory<SearchRequestProcessor>> getRequestProcessors(
        SearchPipelinePlugin.Parameters parameters
    ) {
        ResumeOnNode resume = new ResumeOnNode(parameters.threadContext, parameters.genericExecutor);
        StudentStore.ChunkSearch search = parameters.client::search;
        Supplier<StudentStore> store = () -> students(search, parameters.threadContext, parameters.genericExecutor);
        return Map.of(
            CogrExpandRequestProcessor.TYPE,
            new CogrExpandRequestProcessor.Factory(http, parameters.env.settings(), resume, store)
        );
    }

    @Override
    public Map<String, org.opensearch.search.pipeline.Processor.Factory<SearchResponseProcessor>> getResponseProcessors(
        SearchPipelinePlugin.Parameters parameters
    ) {
        return Map.of(CogrExpandStatusProcessor.TYPE, new CogrExpandStatusProcessor.Factory());
    }
}
