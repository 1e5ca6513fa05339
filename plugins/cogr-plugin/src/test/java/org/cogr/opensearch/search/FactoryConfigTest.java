/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.search;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.HashMap;
import java.util.Map;

import org.cogr.opensearch.ingest.CogrKeywordsProcessor;
import org.cogr.opensearch.service.ServiceHttp;
import org.junit.Test;
import org.opensearch.OpenSearchException;
import org.opensearch.common.settings.Settings;

/** Config errors name the processor type, its tag and the property (as OpenSearch headers). */
public class FactoryConfigTest {

    private static Map<String, Object> config(Object... kv) {
        Map<String, Object> map = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            map.put((String) kv[i], kv[i + 1]);
        }
        return map;
    }

    private static void assertNames(OpenSearchException e, String type, String tag, String property) {
        assertEquals(type, e.getMetadata("opensearch.processor_type").get(0));
        assertEquals(tag, e.getMetadata("opensearch.processor_tag").get(0));
        assertEquals(property, e.getMetadata("opensearch.property_name").get(0));
    }

    private final CogrExpandRequestProcessor.Factory expand = new CogrExpandRequestProcessor.Factory(
        new ServiceHttp(), Settings.EMPTY, null, () -> null
    );

    @Test
    public void expandNeedsAServiceUrl() {
        OpenSearchException e = assertThrows(OpenSearchException.class, () -> expand.create(null, "t1", null, false, config(), null));
        assertNames(e, "cogr_expand", "t1", "service_url");
        assertTrue(e.getMessage(), e.getMessage().contains("plugins.cogr.service_url"));
    }

    @Test
    public void expandRejectsABadUrlTimeoutAndCacheSize() {
        OpenSearchException url = assertThrows(
            OpenSearchException.class,
            () -> expand.create(null, "t2", null, false, config("service_url", "localhost:8300"), null)
        );
        assertNames(url, "cogr_expand", "t2", "service_url");
        OpenSearchException timeout = assertThrows(
            OpenSearchException.class,
            () -> expand.create(null, "t3", null, false, config("service_url", "http://h:1", "timeout", "soon"), null)
        );
        assertNames(timeout, "cogr_expand", "t3", "timeout");
        OpenSearchException cache = assertThrows(
            OpenSearchException.class,
            () -> expand.create(null, "t4", null, false, config("service_url", "http://h:1", "cache_size", -1), null)
        );
        assertNames(cache, "cogr_expand", "t4", "cache_size");
    }

    @Test
    public void theNodeSettingIsTheDefaultUrlAndOptionsAreConsumed() throws Exception {
        Settings settings = Settings.builder().put("plugins.cogr.service_url", "http://serve:8300").build();
        CogrExpandRequestProcessor.Factory factory = new CogrExpandRequestProcessor.Factory(new ServiceHttp(), settings, null, () -> null);
        Map<String, Object> cfg = config("field", "name", "timeout", "150ms");
        assertNotNull(factory.create(null, "t5", null, false, cfg, null));
        assertTrue("every option is consumed, so OpenSearch reports unknown ones", cfg.isEmpty());
    }

    @Test
    public void keywordsProcessorValidatesItsConfig() {
        CogrKeywordsProcessor.Factory factory = new CogrKeywordsProcessor.Factory(new ServiceHttp(), Settings.EMPTY, null, () -> null);
        OpenSearchException kMax = assertThrows(
            OpenSearchException.class,
            () -> factory.create(null, "k1", null, config("service_url", "http://h:1", "k_max", 0))
        );
        assertNames(kMax, "cogr_keywords", "k1", "k_max");
        OpenSearchException batch = assertThrows(
            OpenSearchException.class,
            () -> factory.create(null, "k2", null, config("service_url", "http://h:1", "batch_size", 0))
        );
        assertEquals("cogr_keywords", batch.getMetadata("opensearch.processor_type").get(0));
    }

    @Test
    public void aStudentAndAServiceUrlTogetherAreRefusedAndAStudentNeedsNoUrl() throws Exception {
        OpenSearchException both = assertThrows(
            OpenSearchException.class,
            () -> expand.create(null, "s1", null, false, config("student", "r+r0+student-x", "service_url", "http://h:1"), null)
        );
        assertNames(both, "cogr_expand", "s1", "student");
        OpenSearchException round = assertThrows(
            OpenSearchException.class,
            () -> expand.create(null, "s2", null, false, config("student", "r+r0+student-x", "round", "first"), null)
        );
        assertNames(round, "cogr_expand", "s2", "round");
        Map<String, Object> cfg = config("student", "r+r0+student-x", "run", "r", "round", 0);
        assertNotNull(expand.create(null, "s3", null, false, cfg, null));
        assertTrue("every option is consumed", cfg.isEmpty());
    }
}
