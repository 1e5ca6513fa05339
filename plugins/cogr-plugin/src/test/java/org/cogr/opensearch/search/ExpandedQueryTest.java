/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.search;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.Test;
import org.opensearch.common.xcontent.XContentFactory;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.core.common.bytes.BytesReference;
import org.opensearch.core.xcontent.ToXContent;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.index.query.BoolQueryBuilder;
import org.opensearch.index.query.QueryBuilder;
import org.opensearch.index.query.QueryBuilders;

/** The query shape must be the Python builder's (cogr_search/opensearch/query.py). */
public class ExpandedQueryTest {

    private static Map<String, Object> json(QueryBuilder query) throws IOException {
        try (XContentBuilder builder = XContentFactory.jsonBuilder()) {
            query.toXContent(builder, ToXContent.EMPTY_PARAMS);
            return XContentHelper.convertToMap(JsonXContent.jsonXContent, BytesReference.bytes(builder).utf8ToString(), true);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    public void keywordQueryHasTheTermsFilterAndTheTextShould() throws IOException {
        Map<String, Object> bool = (Map<String, Object>) json(ExpandedQuery.keywordQuery(List.of("sofa", "red couch"))).get("bool");
        List<Object> filter = (List<Object>) bool.get("filter");
        assertEquals(1, filter.size());
        Map<String, Object> terms = (Map<String, Object>) ((Map<String, Object>) filter.get(0)).get("terms");
        assertEquals(List.of("sofa", "red couch"), terms.get("cogr_keywords"));
        List<Object> should = (List<Object>) bool.get("should");
        Map<String, Object> match = (Map<String, Object>) ((Map<String, Object>) should.get(0)).get("match");
        assertEquals("sofa red couch", ((Map<String, Object>) match.get("cogr_keywords.text")).get("query"));
        assertTrue(!bool.containsKey("must"));
    }

    @Test
    public void anEmptyRepresentationHasNoShould() {
        assertTrue(ExpandedQuery.keywordQuery(List.of()).should().isEmpty());
    }

    @Test
    public void rewriteReplacesTheMatchAndKeepsTheOtherClauses() {
        BoolQueryBuilder app = QueryBuilders.boolQuery()
            .must(QueryBuilders.matchQuery("title", "Red Sofa"))
            .filter(QueryBuilders.termQuery("brand", "acme"))
            .mustNot(QueryBuilders.matchQuery("description", "broken"));
        assertEquals(Set.of("Red Sofa"), ExpandedQuery.matchTexts(app, "title"));
        QueryBuilder out = ExpandedQuery.rewrite(app, "title", Map.of("Red Sofa", List.of("sofa", "red sofa")));
        assertSame(app, out);
        BoolQueryBuilder expanded = (BoolQueryBuilder) app.must().get(0);
        assertEquals(ExpandedQuery.keywordQuery(List.of("sofa", "red sofa")), expanded);
        assertEquals(QueryBuilders.termQuery("brand", "acme"), app.filter().get(0));
        assertEquals(QueryBuilders.matchQuery("description", "broken"), app.mustNot().get(0));
    }

    @Test
    public void aMatchOnAnotherFieldIsLeftAlone() {
        QueryBuilder app = QueryBuilders.matchQuery("description", "sofa");
        assertTrue(ExpandedQuery.matchTexts(app, "title").isEmpty());
        assertSame(app, ExpandedQuery.rewrite(app, "title", Map.of("sofa", List.of("sofa"))));
    }
}
