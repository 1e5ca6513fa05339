/*
 * cogr-search: plugins given as classes on the classpath, for the local Elasticsearch 9 node
 * (src/main/java-es9; the 8.x twin is in src/main/java-es8).
 */
package org.elasticsearch.plugins;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.elasticsearch.Build;
import org.elasticsearch.action.admin.cluster.node.info.PluginsAndModules;
import org.elasticsearch.common.settings.Settings;

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
 * <p>No bundle is scanned and no jar-hell check runs (the classpath is ours, built by Maven):
 * the {@link PluginsLoader} is an empty one, made with its package-private constructor,
 * because its public factory exports the server's module-qualified packages, which fails on a
 * classpath (the server is in the unnamed module, which has no descriptor).
 *
 * <p>What 9.x changed from 8.x here: the plugins service takes a {@link PluginsLoader}
 * instead of module and plugin directories, and {@link PluginsService.LoadedPlugin} has no
 * module layer.
 */
public final class CogrClasspathPluginsService extends PluginsService {

    private final List<LoadedPlugin> classpathPlugins;
    private final PluginsAndModules info;

    /** A loader with no modules and no plugins (the node's plugins are all on the classpath). */
    public static PluginsLoader emptyLoader() {
        return new PluginsLoader(Set.of(), Set.of(), Map.of());
    }

    public CogrClasspathPluginsService(Settings settings, Path configPath, PluginsLoader loader, Collection<Class<? extends Plugin>> pluginClasses) {
        super(settings, configPath, loader);
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
            loaded.add(new LoadedPlugin(descriptor, loadPlugin(type, settings, configPath), type.getClassLoader()));
            modules.add(descriptor);
        }
        loadExtensions(loaded);
        this.classpathPlugins = List.copyOf(loaded);
        this.info = new PluginsAndModules(List.of(), modules);
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
