"""Bulk loading against a real node: counts, resumability, keywords preserved, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import Item, load_dataset, sample_catalog_path
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target
from cogr_search.keywords import normalize
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.shadow_build import item_index_from_opensearch
from cogr_search.cluster.sync import sync_keywords
from cogr_search.shadow.index import ItemIndex

pytestmark = [pytest.mark.opensearch, pytest.mark.secured]  # secured: also run on secured nodes


def _source(cluster: Cluster, alias: str, item_id: str) -> dict:
    return cluster.call(cluster.client.get, index=alias, id=item_id)["_source"]


def test_ingest_creates_alias_loads_everything_and_reruns_converge(cluster: Cluster, index_name: str) -> None:
    dataset = load_dataset(sample_catalog_path())
    items = list(dataset.items.values())
    half = ingest_items(cluster, index_name, items[:100], total=100, chunk_size=37, progress=False)
    assert half.alias_created and half.created == 100 and half.failed == 0
    assert alias_target(cluster, index_name) == half.index
    # "crash" after 100 items, then rerun the whole catalog: the rest is created, the first 100 rewritten
    full = ingest_items(cluster, index_name, items, total=len(items), chunk_size=37, progress=False)
    assert not full.alias_created and full.index == half.index and full.mode == "index"
    assert (full.created, full.updated, full.unchanged, full.failed) == (len(items) - 100, 100, 0, 0)
    assert full.documents_in_index == len(items)
    item = items[0]
    assert _source(cluster, index_name, item.id) == {
        "id": item.id, "title": item.title, "description": item.description, "cogr_keywords": [normalize(item.title)]
    }


def test_reingest_updates_catalog_fields_and_keeps_synced_keywords(cluster: Cluster, index_name: str) -> None:
    ingest_items(cluster, index_name, [Item("a", "oak table", "old"), Item("b", "lamp")], progress=False)
    sync_keywords(cluster, index_name, {"a": ["oak", "table"], "b": ["light"]}, 1, "m", progress=False)
    report = ingest_items(cluster, index_name, [Item("a", "oak table", "new text"), Item("b", "lamp")], progress=False)
    assert report.mode == "upsert" and (report.updated, report.unchanged) == (1, 1)
    source = _source(cluster, index_name, "a")
    assert source["description"] == "new text" and source["cogr_keywords"] == ["oak", "table", "oak table"]
    assert source["cogr_round"] == 1


def test_items_ingested_after_a_sync_match_on_their_title(cluster: Cluster, index_name: str) -> None:
    ingest_items(cluster, index_name, [Item("a", "Oak Table"), Item("b", "Lamp")], progress=False)
    sync_keywords(cluster, index_name, {"a": ["oak"], "b": ["light"]}, 1, "m", progress=False)

    report = ingest_items(cluster, index_name, [Item("c", "Brass Floor Lamp"), Item("b", "Desk Lamp")], progress=False)

    assert (report.created, report.updated) == (1, 1)
    assert _source(cluster, index_name, "c")["cogr_keywords"] == ["brass floor lamp"]
    # a changed title replaces the old title keyword; the synced keywords stay
    assert _source(cluster, index_name, "b")["cogr_keywords"] == ["light", "desk lamp"]
    served = item_index_from_opensearch(cluster, index_name)
    shadow = ItemIndex.build({"a": ["oak"], "b": ["light"]}, {"a": "Oak Table", "b": "Desk Lamp", "c": "Brass Floor Lamp"})
    assert {i: served.keywords_of(i) for i in "abc"} == {i: shadow.keywords_of(i) for i in "abc"}


def test_rejected_documents_are_counted_not_fatal(cluster: Cluster, index_name: str) -> None:
    good = Item("ok", "fine", "")
    bad = Item("x" * 600, "an id longer than OpenSearch's 512-byte limit", "")
    report = ingest_items(cluster, index_name, [good, bad], progress=False)
    assert report.created == 1 and report.failed == 1
    assert report.failures and report.failures[0].startswith("x")


def test_ingest_command_json_and_exit_status(cluster_url: str, index_name: str, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(sample_catalog_path()), "--index", index_name, "--opensearch-url", cluster_url, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["items"] == payload["created"] == payload["documents_in_index"] == 359
    catalog = tmp_path / "c.csv"
    catalog.write_text("sku,name\nA,oak\nB,pine\n", encoding="utf-8")
    result = runner.invoke(cli, ["ingest", str(catalog), "--index", index_name, "--columns", "id=sku,title=name",
                                 "--opensearch-url", cluster_url])
    assert result.exit_code == 0, result.output
    assert "2 items" in result.stdout and "361 documents in the index" in result.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text("sku,name\nA,oak\nA,pine\n", encoding="utf-8")
    result = runner.invoke(cli, ["ingest", str(bad), "--index", index_name, "--columns", "id=sku,title=name",
                                 "--opensearch-url", cluster_url])
    assert result.exit_code == 1
    assert "bad.csv:3: duplicate item id 'A' (first on line 2)" in result.output


def test_ingest_into_a_version_blocked_by_a_sync_says_so(cluster: Cluster, index_name: str) -> None:
    from cogr_search.cluster.indices import set_write_block

    report = ingest_items(cluster, index_name, [Item("a", "oak table")], progress=False)
    set_write_block(cluster, report.index, True)  # what a sync does during its copy
    try:
        blocked = ingest_items(cluster, index_name, [Item("b", "lamp")], progress=False)
    finally:
        set_write_block(cluster, report.index, False)
    assert blocked.failed == 1 and blocked.documents_in_index == 1
    assert "cluster_block_exception" in blocked.failures[0] and "rerun that sync" in blocked.failures[0]
