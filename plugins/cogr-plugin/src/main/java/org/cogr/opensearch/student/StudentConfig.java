/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.util.Map;
import java.util.function.Supplier;

import org.cogr.opensearch.service.Expander;
import org.cogr.opensearch.service.ExpansionServiceClient;
import org.cogr.opensearch.service.ServiceConfig;
import org.cogr.opensearch.service.ServiceHttp;
import org.opensearch.common.settings.Setting;
import org.opensearch.common.settings.Settings;
import org.opensearch.ingest.ConfigurationUtils;

/**
 * A processor's source of keywords, from its config: {@code "student": "<model id>"} (with
 * {@code run} and {@code round}, the provenance written on documents) expands inside the
 * node with the stored student; otherwise {@code service_url} (or the node's
 * {@code plugins.cogr.service_url}) names the expansion service. Both at once is a
 * configuration error naming the processor and the property.
 */
public final class StudentConfig {

    public static final String STUDENT = "student";
    public static final String RUN = "run";
    public static final String ROUND = "round";

    private StudentConfig() {}

    public static Expander expander(
        String type,
        String tag,
        Map<String, Object> config,
        Supplier<StudentStore> students,
        Settings settings,
        ServiceHttp http,
        Setting<String> serviceUrlSetting
    ) {
        String modelId = ConfigurationUtils.readOptionalStringProperty(type, tag, config, STUDENT);
        if (modelId == null) {
            return new ExpansionServiceClient(ServiceConfig.serviceUrl(type, tag, config, settings, serviceUrlSetting), http);
        }
        if (config.containsKey(ServiceConfig.SERVICE_URL)) {
            throw ConfigurationUtils.newConfigurationException(type, tag, STUDENT, "set either [student] or [service_url], not both");
        }
        if (modelId.isBlank()) {
            throw ConfigurationUtils.newConfigurationException(type, tag, STUDENT, "must not be empty");
        }
        String run = ConfigurationUtils.readOptionalStringProperty(type, tag, config, RUN);
        Object round = config.remove(ROUND);
        Integer roundNumber = null;
        if (round != null) {
            try {
                roundNumber = Integer.valueOf(round.toString());
            } catch (NumberFormatException e) {
                throw ConfigurationUtils.newConfigurationException(type, tag, ROUND, "is not an integer: [" + round + "]");
            }
        }
        return new StudentExpander(students.get(), modelId, run, roundNumber);
    }
}
