/*
 * cogr-search local node: the OpenSearch 2.x adapter (src/main/java-os2).
 */
package org.cogr.opensearch.node;

import java.util.List;

import org.cogr.opensearch.CogrPlugin;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.ingest.common.IngestCommonPlugin;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.search.pipeline.common.SearchPipelineCommonModulePlugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * The OpenSearch 2.x {@link Node} with the modules and the project's plugin as classpath plugins.
 *
 * <p>Why a per-line class: {@code Node}'s constructor that accepts classpath plugins is protected
 * (hence a subclass) and takes plugin classes in 2.x but {@code PluginInfo} descriptors in 3.x,
 * and 3.x renamed the module classes. Its 3.x twin lives in {@code src/main/java-os3}.
 */
final class LineNode extends Node {

    /**
     * The modules a stock 2.19 distribution loads that cogr-search needs (HTTP/transport, the
     * standard analyzers, painless, extra mappers, reindex, ingest and search pipeline
     * processors), plus the project's plugin. In 2.19 they keep their old class names, except
     * the search pipeline module.
     */
    static final List<Class<? extends Plugin>> CLASSPATH_PLUGINS = List.of(
        Netty4Plugin.class,
        CommonAnalysisPlugin.class,
        PainlessPlugin.class,
        MapperExtrasPlugin.class,
        ReindexPlugin.class,
        IngestCommonPlugin.class,
        SearchPipelineCommonModulePlugin.class,
        CogrPlugin.class
    );

    private LineNode(Environment environment) {
        super(environment, CLASSPATH_PLUGINS, true);
    }

    /** A node (not started) of this line for {@code environment}. */
    static Node create(Environment environment) {
        return new LineNode(environment);
    }
}
