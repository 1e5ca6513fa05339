"""The foundation against a real node: index creation, keyword matching, BM25, errors."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from cogr_search.errors import CogrError
from cogr_search.cluster.client import ClusterUnreachable
from cogr_search.connect import connect
from cogr_search.cluster.indices import alias_target, create_index, versions
from cogr_search.cluster.mappings import item_properties
from cogr_search.settings import load_settings
from tests.conftest import free_port

pytestmark = pytest.mark.opensearch


def test_index_create_is_idempotent_and_alias_points_at_first_version(cluster, index_name):
    first = create_index(cluster, index_name)
    second = create_index(cluster, index_name)

    assert first.created and not second.created
    assert first.index == second.index == f"{index_name}--r0-1"
    assert alias_target(cluster, index_name) == first.index
    assert [v.name for v in versions(cluster, index_name)] == [first.index]


def test_concrete_index_has_the_template_mapping(cluster, index_name):
    state = create_index(cluster, index_name)
    mapping = cluster.client.indices.get_mapping(index=state.index)[state.index]["mappings"]
    props = mapping["properties"]

    assert props["id"]["type"] == "keyword"
    assert props["title"]["type"] == "text" and props["description"]["type"] == "text"
    assert props["cogr_keywords"]["type"] == "keyword"
    assert props["cogr_keywords"]["fields"]["text"]["type"] == "text"
    assert props["cogr_round"]["type"] == "integer"
    assert props["cogr_model"]["type"] == "keyword"
    assert props["cogr_updated_at"]["type"] == "date"
    assert set(props) == set(item_properties())


def test_alias_name_that_is_a_concrete_index_is_refused(cluster, index_name):
    concrete = f"{index_name}-plain"
    cluster.client.indices.create(index=concrete)
    try:
        with pytest.raises(CogrError, match="concrete index"):
            create_index(cluster, concrete)
    finally:
        cluster.client.indices.delete(index=concrete)


def _load(cluster, alias: str, docs: dict[str, list[str]]) -> None:
    create_index(cluster, alias)
    for doc_id, keywords in docs.items():
        cluster.client.index(index=alias, id=doc_id, body={"id": doc_id, "title": doc_id, "cogr_keywords": keywords})
    cluster.client.indices.refresh(index=alias)


def _ids(cluster, alias: str, query: dict) -> list[str]:
    hits = cluster.client.search(index=alias, body={"query": query, "size": 100})["hits"]["hits"]
    return [hit["_id"] for hit in hits]


def test_terms_query_matches_exact_keywords_only(cluster, index_name):
    _load(cluster, index_name, {
        "sofa": ["grey sofa", "couch", "living room"],
        "sofas": ["grey sofas"],
        "table": ["oak table", "dining"],
    })
    assert _ids(cluster, index_name, {"terms": {"cogr_keywords": ["grey sofa"]}}) == ["sofa"]
    # Near-misses: plural, case, extra whitespace and a prefix do not match a keyword field.
    for near_miss in ["grey sofas x", "Grey Sofa", "grey  sofa", "grey", "couches"]:
        assert _ids(cluster, index_name, {"terms": {"cogr_keywords": [near_miss]}}) == []
    assert sorted(_ids(cluster, index_name, {"terms": {"cogr_keywords": ["couch", "dining"]}})) == ["sofa", "table"]


def test_text_subfield_ranks_by_bm25(cluster, index_name):
    _load(cluster, index_name, {
        "a": ["oak table"],
        "b": ["oak table", "oak", "oak finish"],
        "c": ["pine table", "kitchen table", "table", "farmhouse", "rustic", "bench", "seating"],
    })
    body = {"query": {"match": {"cogr_keywords.text": "oak table"}}, "explain": True}
    hits = cluster.client.search(index=index_name, body=body)["hits"]["hits"]
    order = [hit["_id"] for hit in hits]

    # "oak" is rarer than "table", and c's long keyword bag is length-normalised down.
    assert order[-1] == "c"
    assert set(order) == {"a", "b", "c"}
    assert "k1" in str(hits[0]["_explanation"]) or "BM25" in str(hits[0]["_explanation"]).upper()


def test_unreachable_url_fails_after_bounded_retries_with_one_line():
    url = f"http://127.0.0.1:{free_port()}"
    settings = load_settings(opensearch_url=url, opensearch_retries=2, opensearch_retry_max_wait_s=0.2)
    start = time.monotonic()
    with pytest.raises(ClusterUnreachable) as err:
        connect(settings)
    assert time.monotonic() - start < 30
    message = str(err.value)
    assert url in message and "3 attempts" in message and "\n" not in message


def test_cli_reports_unreachable_cluster_in_one_line():
    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.run(
        [sys.executable, "-m", "cogr_search.cli", "index", "create", "--index", "x", "--opensearch-url", url],
        capture_output=True, text=True, timeout=120,
        env={"COGR_OPENSEARCH_RETRIES": "1", "COGR_OPENSEARCH_RETRY_MAX_WAIT_S": "0.1", "PATH": ""},
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and lines[0].startswith("Error:")
