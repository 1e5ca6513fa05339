/*
 * cogr-search: an Elasticsearch node whose plugins come from the classpath.
 */
package org.elasticsearch.node;

import java.util.Collection;
import java.util.List;

import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.plugins.CogrClasspathPluginsService;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.plugins.PluginsService;

/**
 * A {@link Node} built with {@link CogrClasspathPluginsService}.
 *
 * <p>Why it sits in Elasticsearch's package: since 8.11 the only public constructor is
 * {@code Node(Environment)}, which loads plugins from disk; the one that accepts another
 * {@link NodeServiceProvider} (the factory of the plugins service) is package-private, as
 * are {@link NodeConstruction#prepareConstruction} and the provider itself.
 */
public final class CogrClasspathNode extends Node {

    public CogrClasspathNode(Environment environment, Collection<Class<? extends Plugin>> pluginClasses) {
        super(NodeConstruction.prepareConstruction(environment, new ClasspathServiceProvider(List.copyOf(pluginClasses)), true));
    }

    /** Everything as in a distribution, except where the plugins come from. */
    private static final class ClasspathServiceProvider extends NodeServiceProvider {
        private final List<Class<? extends Plugin>> pluginClasses;

        ClasspathServiceProvider(List<Class<? extends Plugin>> pluginClasses) {
            this.pluginClasses = pluginClasses;
        }

        @Override
        PluginsService newPluginService(Environment environment, Settings settings) {
            return new CogrClasspathPluginsService(settings, environment.configFile(), pluginClasses);
        }
    }
}
