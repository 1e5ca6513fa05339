/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch;

import java.util.List;

import org.opensearch.common.settings.SecureSetting;
import org.opensearch.common.settings.Setting;
import org.opensearch.core.common.unit.ByteSizeUnit;
import org.opensearch.core.common.unit.ByteSizeValue;
import org.opensearch.core.common.settings.SecureString;
import org.opensearch.common.unit.TimeValue;

/**
 * Every node setting of the plugin, in one place.
 *
 * <p>They are defaults for processor configs: a pipeline that names its own
 * {@code service_url} or {@code timeout} wins, so one cluster can talk to several services.
 * Set them in {@code opensearch.yml} (Docker: environment) to keep URLs out of pipelines.
 */
public final class CogrSettings {

    /** Base URL of the expansion service, e.g. {@code http://cogr-serve:8300}; "" = none. */
    public static final Setting<String> SERVICE_URL = Setting.simpleString("plugins.cogr.service_url", Setting.Property.NodeScope);

    /** Total time a search may wait for a query expansion before falling back. */
    public static final Setting<TimeValue> SEARCH_TIMEOUT = Setting.timeSetting(
        "plugins.cogr.search_timeout",
        TimeValue.timeValueSeconds(2),
        TimeValue.timeValueMillis(1),
        Setting.Property.NodeScope
    );

    /** Total time one ingest batch may wait for item keywords before its documents fail. */
    public static final Setting<TimeValue> INGEST_TIMEOUT = Setting.timeSetting(
        "plugins.cogr.ingest_timeout",
        TimeValue.timeValueSeconds(60),
        TimeValue.timeValueMillis(1),
        Setting.Property.NodeScope
    );

    /**
     * Bearer token the processors send to the service ({@code serve --token-file}); a secure
     * setting, so it lives in the OpenSearch keystore, never in {@code opensearch.yml} or a
     * pipeline, and {@code POST _nodes/reload_secure_settings} swaps it without a restart.
     */
    public static final Setting<SecureString> SERVICE_TOKEN = SecureSetting.secureString("plugins.cogr.service_token", null);

    /**
     * PEM file of the CA that signed an https service's certificate, relative to the node's
     * config folder (or absolute); "" = the JDK's default trust store.
     */
    public static final Setting<String> SERVICE_CA = Setting.simpleString("plugins.cogr.service_ca", Setting.Property.NodeScope);

    /** The index the students' export chunks are stored in (`index create --pipelines --run`). */
    public static final Setting<String> STUDENT_INDEX = Setting.simpleString(
        "plugins.cogr.student_index", "cogr-students", Setting.Property.NodeScope
    );

    /**
     * The largest student export (uncompressed JSON) a node loads; a larger one is refused
     * (searches fall back, ingest fails the batch) rather than filling the heap.
     */
    public static final Setting<ByteSizeValue> STUDENT_MAX_BYTES = Setting.byteSizeSetting(
        "plugins.cogr.student_max_bytes", new ByteSizeValue(256, ByteSizeUnit.MB), Setting.Property.NodeScope
    );

    private CogrSettings() {
    }

    /** What the plugin registers. */
    public static List<Setting<?>> all() {
        return List.of(SERVICE_URL, SEARCH_TIMEOUT, INGEST_TIMEOUT, SERVICE_TOKEN, SERVICE_CA, STUDENT_INDEX, STUDENT_MAX_BYTES);
    }
}
