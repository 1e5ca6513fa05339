"""Sync against a real node: new version, alias swap, keywords + provenance, resume, prune."""

from __future__ import annotations

import pytest
from opensearchpy import helpers

from cogr_search.opensearch.indices import alias_target, create_index, versions
from cogr_search.opensearch.sync import (
    _target_version,
    document_keywords,
    keywords_fingerprint,
    prune_versions,
    sync_keywords,
)

pytestmark = pytest.mark.opensearch

ITEMS = {
    "p1": ("Hartwell Oak Dining Table", "Solid oak, seats six."),
    "p2": ("Linen Throw Pillow, Blue", "Washable cover."),
    "p3": ("Brass Floor Lamp", "Adjustable arm."),
}


def _ingest(cluster, alias: str) -> str:
    state = create_index(cluster, alias)
    actions = (
        {"_index": alias, "_id": i, "_source": {"id": i, "title": t, "description": d}} for i, (t, d) in ITEMS.items()
    )
    helpers.bulk(cluster.client, actions, refresh=True)
    return state.index


def _docs(cluster, index: str) -> dict[str, dict]:
    hits = cluster.client.search(index=index, body={"size": 100})["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def test_document_keywords_adds_title_and_truncates_to_k_max():
    keywords = [f"k{i}" for i in range(40)] + ["K0"]
    result = document_keywords(keywords, "  Oak   Table ", k_max=30)
    assert result[:30] == [f"k{i}" for i in range(30)]
    assert result[30:] == ["oak table"]
    assert document_keywords(["oak table"], "Oak Table") == ["oak table"]


def test_sync_writes_new_version_and_swaps_alias(cluster, index_name):
    first = _ingest(cluster, index_name)
    keywords = {"p1": ["oak table", "Dining Table"], "p2": ["throw pillow"], "ghost": ["nothing"]}

    result = sync_keywords(cluster, index_name, keywords, round_=1, model="run-a+r1+abc", progress=False)

    assert result.index == f"{index_name}-r1-2" and result.previous == first
    assert alias_target(cluster, index_name) == result.index
    assert (result.documents, result.with_keywords, result.unknown_ids, result.resumed) == (3, 2, 1, False)
    docs = _docs(cluster, index_name)
    assert docs["p1"]["cogr_keywords"] == ["oak table", "dining table", "hartwell oak dining table"]
    assert docs["p1"]["cogr_round"] == 1 and docs["p1"]["cogr_model"] == "run-a+r1+abc"
    assert "cogr_updated_at" in docs["p1"]
    # An item without generated keywords still carries its title keyword, and no provenance.
    assert docs["p3"]["cogr_keywords"] == ["brass floor lamp"] and "cogr_round" not in docs["p3"]
    # The previous version is untouched, ready for rollback.
    assert all("cogr_keywords" not in doc for doc in _docs(cluster, first).values())
    hits = cluster.client.search(index=index_name, body={"query": {"terms": {"cogr_keywords": ["throw pillow"]}}})
    assert [h["_id"] for h in hits["hits"]["hits"]] == ["p2"]


def test_sync_resumes_an_unfinished_version(cluster, index_name):
    source = _ingest(cluster, index_name)
    keywords = {"p1": ["oak table"]}
    meta = {"state": "writing", "source": source, "round": 2, "model": "m", "fingerprint": keywords_fingerprint(keywords)}
    crashed, resumed = _target_version(cluster, index_name, 2, meta)
    cluster.client.index(index=crashed.name, id="p1", body={"id": "p1", "title": "half written"})
    assert not resumed and alias_target(cluster, index_name) == source

    result = sync_keywords(cluster, index_name, keywords, round_=2, model="m", progress=False)

    assert result.resumed and result.index == crashed.name
    assert alias_target(cluster, index_name) == crashed.name
    assert _docs(cluster, index_name)["p1"]["title"] == ITEMS["p1"][0]
    assert len(versions(cluster, index_name)) == 2


def test_prune_keeps_newest_versions_and_the_aliased_one(cluster, index_name):
    _ingest(cluster, index_name)
    for round_ in (1, 2, 3):
        sync_keywords(cluster, index_name, {"p1": [f"kw{round_}"]}, round_=round_, model="m", progress=False)
    assert len(versions(cluster, index_name)) == 4

    pruned = prune_versions(cluster, index_name, keep=2)

    assert pruned == [f"{index_name}-r0-1", f"{index_name}-r1-2"]
    assert [v.name for v in versions(cluster, index_name)] == [f"{index_name}-r2-3", f"{index_name}-r3-4"]
    assert alias_target(cluster, index_name) == f"{index_name}-r3-4"
