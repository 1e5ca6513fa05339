/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.search;

import org.cogr.opensearch.DocumentFields;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.opensearch.index.query.AbstractQueryBuilder;
import org.opensearch.index.query.BoolQueryBuilder;
import org.opensearch.index.query.MatchQueryBuilder;
import org.opensearch.index.query.QueryBuilder;
import org.opensearch.index.query.QueryBuilders;

/**
 * The keyword-expanded query of DESIGN.md section 3, and the rewrite of an app's
 * {@code match} into it.
 *
 * <p>{@link #keywordQuery} builds exactly what {@code cogr_search/opensearch/query.py}
 * {@code keyword_query} builds, so that a search through the pipeline and one through the
 * Python API return the same hits in the same order: {@code bool} with
 * {@code filter: terms(cogr_keywords: rep)} and, when the text is not empty,
 * {@code should: match(cogr_keywords.text: " ".join(rep))}.
 *
 * <p>The rewrite finds {@code match} queries on the configured field at the top level or
 * inside {@code bool} clauses (any depth) and replaces each in place, so the app's other
 * clauses (filters, must_not, ...) keep applying; a match inside another compound query is
 * left as is.
 */
final class ExpandedQuery {


    private ExpandedQuery() {
    }

    /** The query body for a query representation {@code S_q ∪ {q}} (normalized keywords). */
    static BoolQueryBuilder keywordQuery(List<String> representation) {
        BoolQueryBuilder bool = QueryBuilders.boolQuery().filter(QueryBuilders.termsQuery(DocumentFields.KEYWORDS, representation));
        String text = String.join(" ", representation);
        if (!text.isEmpty()) {
            bool.should(QueryBuilders.matchQuery(DocumentFields.KEYWORDS_TEXT, text));
        }
        return bool;
    }

    /** The distinct texts of the {@code match} queries on {@code field}, in first-seen order. */
    static Set<String> matchTexts(QueryBuilder query, String field) {
        Set<String> texts = new LinkedHashSet<>();
        collect(query, field, texts);
        return texts;
    }

    private static void collect(QueryBuilder query, String field, Set<String> texts) {
        if (query instanceof MatchQueryBuilder match && field.equals(match.fieldName()) && match.value() != null) {
            String text = match.value().toString();
            if (!text.isBlank()) {  // nothing to expand; the service would refuse it anyway
                texts.add(text);
            }
        } else if (query instanceof BoolQueryBuilder bool) {
            for (List<QueryBuilder> clauses : List.of(bool.must(), bool.should(), bool.filter(), bool.mustNot())) {
                for (QueryBuilder clause : clauses) {
                    collect(clause, field, texts);
                }
            }
        }
    }

    /**
     * {@code query} with every {@code match} on {@code field} replaced by its keyword query
     * ({@code representations} by match text). {@code bool} clause lists are edited in place;
     * the returned builder is the new top-level query.
     */
    static QueryBuilder rewrite(QueryBuilder query, String field, Map<String, List<String>> representations) {
        if (query instanceof MatchQueryBuilder match && field.equals(match.fieldName()) && match.value() != null) {
            List<String> representation = representations.get(match.value().toString());
            if (representation == null) {
                return query;
            }
            BoolQueryBuilder expanded = keywordQuery(representation);
            if (match.boost() != AbstractQueryBuilder.DEFAULT_BOOST) {
                expanded.boost(match.boost());
            }
            if (match.queryName() != null) {
                expanded.queryName(match.queryName());
            }
            return expanded;
        }
        if (query instanceof BoolQueryBuilder bool) {
            for (List<QueryBuilder> clauses : List.of(bool.must(), bool.should(), bool.filter(), bool.mustNot())) {
                for (int i = 0; i < clauses.size(); i++) {
                    clauses.set(i, rewrite(clauses.get(i), field, representations));
                }
            }
        }
        return query;
    }
}
