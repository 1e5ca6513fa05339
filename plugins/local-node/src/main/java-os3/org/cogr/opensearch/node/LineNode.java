/*
 * cogr-search local node: the OpenSearch 3.x adapter (src/main/java-os3).
 */
package org.cogr.opensearch.node;

import java.util.Collections;
import java.util.List;

import org.cogr.opensearch.CogrPlugin;
import org.opensearch.Version;
import org.opensearch.analysis.common.CommonAnalysisModulePlugin;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasModulePlugin;
import org.opensearch.index.reindex.ReindexModulePlugin;
import org.opensearch.ingest.common.IngestCommonModulePlugin;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessModulePlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;
import org.opensearch.search.pipeline.common.SearchPipelineCommonModulePlugin;
import org.opensearch.transport.Netty4ModulePlugin;

/**
 * The OpenSearch 3.x {@link Node} with the modules and the project's plugin as classpath plugins.
 *
 * <p>Why a per-line class: see the 2.x twin in {@code src/main/java-os2}. In 3.x the protected
 * constructor takes {@link PluginInfo} descriptors (one per classpath plugin, built here from
 * the class) and the modules are named {@code *ModulePlugin}.
 */
final class LineNode extends Node {

    /** The same modules as the 2.x line, under their 3.x names, plus the project's plugin. */
    static final List<Class<? extends Plugin>> CLASSPATH_PLUGINS = List.of(
        Netty4ModulePlugin.class,
        CommonAnalysisModulePlugin.class,
        PainlessModulePlugin.class,
        MapperExtrasModulePlugin.class,
        ReindexModulePlugin.class,
        IngestCommonModulePlugin.class,
        SearchPipelineCommonModulePlugin.class,
        CogrPlugin.class
    );

    private LineNode(Environment environment) {
        super(environment, descriptors(CLASSPATH_PLUGINS), true);
    }

    /** A node (not started) of this line for {@code environment}. */
    static Node create(Environment environment) {
        return new LineNode(environment);
    }

    /** A classpath plugin's descriptor: named after its class, for the running OpenSearch and Java. */
    private static List<PluginInfo> descriptors(List<Class<? extends Plugin>> plugins) {
        String java = System.getProperty("java.specification.version");
        return plugins.stream()
            .map(type -> new PluginInfo(type.getName(), "classpath plugin", "NA", Version.CURRENT, java,
                type.getName(), null, Collections.emptyList(), false))
            .toList();
    }
}
