/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Map;

import org.opensearch.common.settings.Setting;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.ingest.ConfigurationUtils;

/**
 * The config keys both processors share: {@code service_url} and {@code timeout}, read with
 * the node settings as defaults. Errors are OpenSearch configuration exceptions, so the
 * message names the processor type, its tag and the property.
 */
public final class ServiceConfig {

    public static final String SERVICE_URL = "service_url";
    public static final String TIMEOUT = "timeout";

    private ServiceConfig() {
    }

    /** {@code service_url} from the config, else the node setting; must be http(s)://host[:port]. */
    public static URI serviceUrl(String type, String tag, Map<String, Object> config, Settings settings, Setting<String> fallback) {
        String url = ConfigurationUtils.readOptionalStringProperty(type, tag, config, SERVICE_URL);
        if (url == null || url.isBlank()) {
            url = fallback.get(settings);
        }
        if (url == null || url.isBlank()) {
            throw ConfigurationUtils.newConfigurationException(
                type, tag, SERVICE_URL, "is required (or set the node setting [" + fallback.getKey() + "])"
            );
        }
        try {
            URI uri = new URI(url.trim());
            String scheme = uri.getScheme();
            if (scheme == null || !(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
                throw ConfigurationUtils.newConfigurationException(
                    type, tag, SERVICE_URL, "must be an http:// or https:// URL with a host, got [" + url + "]"
                );
            }
            return uri;
        } catch (URISyntaxException e) {
            throw ConfigurationUtils.newConfigurationException(type, tag, SERVICE_URL, "is not a URL: [" + url + "]");
        }
    }

    /** {@code timeout} (e.g. "500ms", "2s") from the config, else the node setting; positive. */
    public static TimeValue timeout(String type, String tag, Map<String, Object> config, Settings settings, Setting<TimeValue> fallback) {
        String text = ConfigurationUtils.readOptionalStringProperty(type, tag, config, TIMEOUT);
        if (text == null) {
            return fallback.get(settings);
        }
        TimeValue value;
        try {
            value = TimeValue.parseTimeValue(text, TIMEOUT);
        } catch (RuntimeException e) {
            throw ConfigurationUtils.newConfigurationException(type, tag, TIMEOUT, "is not a time value such as 500ms or 2s: [" + text + "]");
        }
        if (value.millis() <= 0) {
            throw ConfigurationUtils.newConfigurationException(type, tag, TIMEOUT, "must be positive, got [" + text + "]");
        }
        return value;
    }

    /** A positive integer property with a default. */
    public static int positiveInt(String type, String tag, Map<String, Object> config, String key, int defaultValue, int min) {
        Integer value = ConfigurationUtils.readIntProperty(type, tag, config, key, defaultValue);
        if (value == null || value < min) {
            throw ConfigurationUtils.newConfigurationException(type, tag, key, "must be at least " + min + ", got [" + value + "]");
        }
        return value;
    }
}
