/*
 * cogr-search: the root endpoint (GET /) of the local Elasticsearch node.
 */
package org.cogr.elasticsearch.node;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.apache.lucene.util.SetOnce;
import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * Serves {@code GET /} and {@code HEAD /} with the body a distribution answers (node and
 * cluster name, cluster UUID, version block, tagline).
 *
 * <p>Why: since 8.12 the root endpoint lives in the {@code rest-root} module
 * ({@code org.elasticsearch.rest.root.MainRestPlugin}), which, like the other modules, is
 * not published to Maven Central; without it {@code GET /} answers 405. cogr-search
 * detects the engine and its version from that endpoint, and the official clients ask it
 * too. The fields are the documented ones, filled from the server's own {@link Build}
 * and the local cluster state (one node: the local state is the cluster's).
 *
 * <p>It also carries the three analysis components the {@code .security} index needs
 * ({@link SecurityIndexAnalysis}): an Elasticsearch plugin zip holds one plugin class.
 */
public final class RootEndpointPlugin extends Plugin implements ActionPlugin, AnalysisPlugin {

    private final SetOnce<ClusterService> clusterService = new SetOnce<>();

    public RootEndpointPlugin() {
    }

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        return SecurityIndexAnalysis.tokenFilters();
    }

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return SecurityIndexAnalysis.tokenizers();
    }

    @Override
    public Collection<?> createComponents(PluginServices services) {
        clusterService.set(services.clusterService());
        return List.of();
    }

    @Override
    public Collection<RestHandler> getRestHandlers(
        Settings settings,
        NamedWriteableRegistry namedWriteableRegistry,
        RestController restController,
        ClusterSettings clusterSettings,
        IndexScopedSettings indexScopedSettings,
        SettingsFilter settingsFilter,
        IndexNameExpressionResolver indexNameExpressionResolver,
        Supplier<DiscoveryNodes> nodesInCluster,
        Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(new RootHandler(clusterService::get));
    }

    /** The handler; reads the cluster service at request time (it is set during node construction). */
    static final class RootHandler extends BaseRestHandler {
        private final Supplier<ClusterService> clusterService;

        RootHandler(Supplier<ClusterService> clusterService) {
            this.clusterService = clusterService;
        }

        @Override
        public String getName() {
            return "cogr_main_action";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            ClusterService cluster = clusterService.get();
            return channel -> {
                Build build = Build.current();
                XContentBuilder body = channel.newBuilder();
                body.startObject();
                body.field("name", cluster.getNodeName());
                body.field("cluster_name", cluster.getClusterName().value());
                body.field("cluster_uuid", cluster.state().metadata().clusterUUID());
                body.startObject("version")
                    .field("number", build.qualifiedVersion())
                    .field("build_flavor", build.flavor())
                    .field("build_type", build.type().displayName())
                    .field("build_hash", build.hash())
                    .field("build_date", build.date())
                    .field("build_snapshot", build.isSnapshot())
                    .field("lucene_version", IndexVersion.current().luceneVersion().toString())
                    .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
                    .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
                    .endObject();
                body.field("tagline", "You Know, for Search");
                body.endObject();
                channel.sendResponse(new RestResponse(RestStatus.OK, body));
            };
        }
    }
}
