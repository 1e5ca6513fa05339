"""The shape of the keyword-expanded query (the parity test checks its behaviour)."""

from __future__ import annotations

from cogr_search.cluster.query import keyword_query


def test_filter_terms_and_should_match() -> None:
    query = keyword_query(["red shoes", "sandals"])
    assert query == {
        "bool": {
            "filter": [{"terms": {"cogr_keywords": ["red shoes", "sandals"]}}],
            "should": [{"match": {"cogr_keywords.text": "red shoes sandals"}}],
        }
    }


def test_caller_filters_are_appended() -> None:
    brand = {"term": {"brand": "acme"}}
    query = keyword_query(("lamp",), filters=[brand])
    assert query["bool"]["filter"] == [{"terms": {"cogr_keywords": ["lamp"]}}, brand]


def test_empty_representation_has_no_should_clause() -> None:
    assert keyword_query([]) == {"bool": {"filter": [{"terms": {"cogr_keywords": []}}]}}
