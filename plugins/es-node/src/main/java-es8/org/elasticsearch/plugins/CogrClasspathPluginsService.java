/*
 * cogr-search: plugins given as classes on the classpath, for the local Elasticsearch node.
 */
package org.elasticsearch.plugins;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.elasticsearch.Build;
import org.elasticsearch.action.admin.cluster.node.info.PluginsAndModules;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.jdk.ModuleQualifiedExportsService;

/**
 * A {@link PluginsService} whose plugins are classes already on the classpath, instead of
 * bundles found under {@code modules/} and {@code plugins/}.
 *
 * <p>Why it sits in Elasticsearch's package: Elasticsearch 8 has no public way to pass
 * classpath plugins to a node (OpenSearch's protected {@code Node} constructor has no
 * counterpart since 8.11), and {@link PluginsService.LoadedPlugin}, which a subclass must
 * return from {@link #plugins()}, is package-private. On the classpath all jars share the
 * unnamed module, so a class of this package in our jar can use them; this is also how
 * Elasticsearch's own test framework starts nodes with classpath plugins.
 *
 * <p>Module and plugin directories are passed as null, so no bundle is scanned and no
 * jar-hell check runs (the classpath is ours, built by Maven).
 */
public final class CogrClasspathPluginsService extends PluginsService {

    private final List<LoadedPlugin> classpathPlugins;
    private final PluginsAndModules info;

    public CogrClasspathPluginsService(Settings settings, Path configPath, Collection<Class<? extends Plugin>> pluginClasses) {
        super(settings, configPath, null, null);
        List<LoadedPlugin> loaded = new ArrayList<>();
        List<PluginDescriptor> modules = new ArrayList<>();
        for (Class<? extends Plugin> type : pluginClasses) {
            // Reported as modules: that is what these plugins are in a distribution.
            PluginDescriptor descriptor = new PluginDescriptor(
                type.getName(),
                "classpath module of the cogr-search local node",
                Build.current().version(),
                Build.current().version(),
                Integer.toString(Runtime.version().feature()),
                type.getName(),
                null,
                List.of(),
                false,
                false,
                false,
                false
            );
            loaded.add(new LoadedPlugin(descriptor, loadPlugin(type, settings, configPath), type.getClassLoader(), ModuleLayer.boot()));
            modules.add(descriptor);
        }
        loadExtensions(loaded);
        this.classpathPlugins = List.copyOf(loaded);
        this.info = new PluginsAndModules(List.of(), modules);
    }

    /**
     * Does nothing. A distribution runs the server as the named module
     * {@code org.elasticsearch.server} and exports its qualified packages to plugin modules
     * here; on a classpath the server is in the unnamed module, which has no descriptor
     * (the base implementation fails with a NullPointerException in
     * {@code ModuleQualifiedExportsService}) and already exports everything. Called from
     * the super constructor: it must not touch this class's fields.
     */
    @Override
    protected void addServerExportsService(Map<String, List<ModuleQualifiedExportsService>> qualifiedExports) {
    }

    @Override
    protected List<LoadedPlugin> plugins() {
        return classpathPlugins;
    }

    @Override
    public PluginsAndModules info() {
        return info;
    }
}
