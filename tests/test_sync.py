"""Sync against a real node: new version, alias swap, coverage, crash safety, rejections."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import Item
from cogr_search.errors import CogrError, InputError
from cogr_search.keywords import MAX_TERM_BYTES
from cogr_search.cluster import title_pipeline
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.documents import item_keywords
from cogr_search.cluster.indices import alias_target, shape_of, versions, write_blocked
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.shadow_build import item_index_from_opensearch
from cogr_search.cluster import sync as sync_module
from cogr_search.cluster.sync import (
    SyncConfig,
    SyncRejected,
    _fresh_target,
    keywords_fingerprint,
    prune_versions,
    sync_keywords,
    sync_meta,
)
from cogr_search.settings import load_settings
from cogr_search.shadow.index import ItemIndex
from tests.conftest import all_engines, drop_indices, drop_template

pytestmark = pytest.mark.opensearch
# Tests that also run on secured nodes; the two behind the plain-HTTP flaky proxy cannot.
secured = pytest.mark.secured

ITEMS = {
    "p1": ("Hartwell Oak Dining Table", "Solid oak, seats six."),
    "p2": ("Linen Throw Pillow, Blue", "Washable cover."),
    "p3": ("Brass Floor Lamp", "Adjustable arm."),
}
TITLE_ONLY = SyncConfig(missing="title-only")


def _ingest(cluster, alias: str, items: dict = ITEMS) -> str:
    report = ingest_items(cluster, alias, [Item(i, t, d) for i, (t, d) in items.items()], progress=False)
    return report.index


def _docs(cluster, index: str) -> dict[str, dict]:
    hits = cluster.client.search(index=index, body={"size": 100})["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def _names(cluster, alias: str) -> list[str]:
    return [v.name for v in versions(cluster, alias)]


def test_item_keywords_adds_title_and_truncates_to_k_max():
    keywords = [f"k{i}" for i in range(40)] + ["K0"]
    result = item_keywords(keywords, "  Oak   Table ", k_max=30)
    assert result[:30] == [f"k{i}" for i in range(30)]
    assert result[30:] == ["oak table"]
    assert item_keywords(["oak table"], "Oak Table") == ["oak table"]


@secured
@all_engines
def test_sync_writes_new_version_and_swaps_alias(cluster, index_name):
    first = _ingest(cluster, index_name)
    keywords = {"p1": ["oak table", "Dining Table"], "p2": ["throw pillow"]}

    result = sync_keywords(cluster, index_name, keywords, round_=1, model="run-a+r1+abc", config=TITLE_ONLY, progress=False)

    assert result.index == f"{index_name}--r1-2" and result.previous == first
    assert alias_target(cluster, index_name) == result.index
    assert (result.documents, result.with_keywords, result.title_only, result.resumed) == (3, 2, 1, False)
    docs = _docs(cluster, index_name)
    assert docs["p1"]["cogr_keywords"] == ["oak table", "dining table", "hartwell oak dining table"]
    assert docs["p1"]["cogr_round"] == 1 and docs["p1"]["cogr_model"] == "run-a+r1+abc"
    assert "cogr_updated_at" in docs["p1"]
    # An item without generated keywords still carries its title keyword, and no provenance.
    assert docs["p3"]["cogr_keywords"] == ["brass floor lamp"] and "cogr_round" not in docs["p3"]
    # The previous version is untouched (title keywords from ingest only), ready for rollback.
    assert all(len(doc["cogr_keywords"]) == 1 for doc in _docs(cluster, first).values())
    assert not write_blocked(cluster, first)
    hits = cluster.client.search(index=index_name, body={"query": {"terms": {"cogr_keywords": ["throw pillow"]}}})
    assert [h["_id"] for h in hits["hits"]["hits"]] == ["p2"]


@secured
@all_engines
def test_served_documents_equal_the_shadow_index(cluster, index_name):
    items = {**ITEMS, "long": ("Rug " + "x" * (MAX_TERM_BYTES + 100), "")}
    _ingest(cluster, index_name, items)
    keywords = {"p1": ["oak table", "Oak Table "], "p2": [f"k{i}" for i in range(40)], "long": ["rug"]}
    notes: list[str] = []

    result = sync_keywords(cluster, index_name, keywords, 1, "m", TITLE_ONLY, progress=False, notify=notes.append)

    assert result.cut_titles == 1 and any("cut" in note for note in notes)
    served = item_index_from_opensearch(cluster, index_name)
    shadow = ItemIndex.build(keywords, {i: t for i, (t, _) in items.items()})
    for item_id in items:
        assert served.keywords_of(item_id) == shadow.keywords_of(item_id)
    long_title = served.keywords_of("long")[-1]
    assert len(long_title.encode()) <= MAX_TERM_BYTES and long_title.startswith("rug xx")


@secured
def test_keywords_that_do_not_cover_the_catalog_are_refused_with_counts(cluster, index_name):
    source = _ingest(cluster, index_name)
    with pytest.raises(InputError, match=r"keywords cover 2 of 3 items .* 1 have none \('p3'\).*--missing keep"):
        sync_keywords(cluster, index_name, {"p1": ["a"], "p2": ["b"]}, 1, "m", progress=False)
    assert alias_target(cluster, index_name) == source and _names(cluster, index_name) == [source]
    assert not write_blocked(cluster, source)


@secured
def test_missing_keep_carries_the_previous_versions_keywords(cluster, index_name):
    _ingest(cluster, index_name)
    sync_keywords(cluster, index_name, {"p1": ["oak"], "p2": ["pillow"], "p3": ["lamp"]}, 1, "m1", progress=False)

    result = sync_keywords(cluster, index_name, {"p1": ["table"]}, 2, "m2", SyncConfig(missing="keep"), progress=False)

    assert (result.with_keywords, result.kept) == (1, 2)
    docs = _docs(cluster, index_name)
    assert docs["p1"]["cogr_keywords"][0] == "table" and docs["p1"]["cogr_model"] == "m2"
    assert docs["p3"]["cogr_keywords"] == ["lamp", "brass floor lamp"] and docs["p3"]["cogr_model"] == "m1"


@secured
def test_ids_are_stripped_and_unknown_ids_above_the_tolerance_are_listed(cluster, index_name):
    _ingest(cluster, index_name)
    result = sync_keywords(cluster, index_name, {" p1 ": ["oak"], "p2\t": ["pillow"], "p3": ["lamp"]}, 1, "m",
                           progress=False)
    assert (result.with_keywords, result.unknown_ids) == (3, 0)
    with pytest.raises(InputError, match=r"2 of 5 keyword ids are not items .*'ghost1', 'ghost2'"):
        sync_keywords(cluster, index_name, {"p1": ["x"], "p2": ["y"], "p3": ["z"], "ghost1": [], "ghost2": []}, 2,
                      "m", progress=False)
    tolerant = SyncConfig(unknown_tolerance=0.5)
    result = sync_keywords(cluster, index_name, {"p1": ["x"], "p2": ["y"], "p3": ["z"], "ghost1": []}, 2, "m", tolerant,
                           progress=False)
    assert result.unknown_ids == 1 and result.unknown_sample == ["ghost1"]


@secured
def test_new_version_has_explicit_mapping_and_source_shape_despite_templates(cluster, index_name):
    source = _ingest(cluster, index_name)
    cluster.client.indices.put_settings(index=source, body={"index": {"number_of_replicas": 1}})
    cluster.client.indices.put_index_template(name=f"cogr-{index_name}", body={
        "index_patterns": [f"{index_name}--r*"], "priority": 200,
        "template": {"settings": {"index": {"number_of_replicas": 0, "refresh_interval": "30s"}}}})
    try:
        result = sync_keywords(cluster, index_name, {i: ["k"] for i in ITEMS}, 1, "m", progress=False)
        assert shape_of(cluster, result.index) == shape_of(cluster, source)
        assert shape_of(cluster, result.index).replicas == 1
        hijack = f"{index_name}-hijack"
        cluster.client.indices.put_index_template(name=hijack, body={
            "index_patterns": [f"{index_name}--r*"], "priority": 500,
            "template": {"mappings": {"properties": {"extra": {"type": "keyword"}}}}})
        try:
            with pytest.raises(CogrError, match=rf"mapping differs .*{hijack}"):
                sync_keywords(cluster, index_name, {i: ["j"] for i in ITEMS}, 2, "m", progress=False)
        finally:
            cluster.client.indices.delete_index_template(name=hijack)
        assert alias_target(cluster, index_name) == result.index
        assert _names(cluster, index_name) == [source, result.index]
    finally:
        drop_template(cluster, f"cogr-{index_name}")


@secured
def test_aliases_whose_names_prefix_each_other_both_work(cluster, index_name):
    rugs = f"{index_name}-rugs"
    try:
        _ingest(cluster, index_name)
        _ingest(cluster, rugs, {"r1": ("Wool Rug", "")})
        sync_keywords(cluster, index_name, {i: ["k"] for i in ITEMS}, 1, "m", progress=False)
        sync_keywords(cluster, rugs, {"r1": ["rug"]}, 1, "m", progress=False)
        prune_versions(cluster, index_name, keep=1)
        assert _names(cluster, index_name) == [f"{index_name}--r1-2"]
        assert _names(cluster, rugs) == [f"{rugs}--r0-1", f"{rugs}--r1-2"]
        assert set(_docs(cluster, rugs)) == {"r1"} and set(_docs(cluster, index_name)) == set(ITEMS)
    finally:
        drop_indices(cluster, f"{rugs}--*")


@secured
def test_a_write_just_before_the_freeze_reaches_the_new_version(cluster, index_name):
    source = _ingest(cluster, index_name)

    def write_now(message: str) -> None:
        if "refused for the final" in message:  # the last moment writes are accepted
            cluster.client.index(index=index_name, id="late", body={"id": "late", "title": "Late Item"})

    result = sync_keywords(cluster, index_name, {i: ["k"] for i in ITEMS}, 1, "m", progress=False, notify=write_now)

    assert result.index != source and "late" in _docs(cluster, result.index)
    assert _docs(cluster, result.index)["late"]["cogr_keywords"] == ["late item"]
    assert result.caught_up == 1 and not write_blocked(cluster, source)


def _title_pipeline_runs(cluster) -> int:
    found = cluster.client.nodes.stats(metric="ingest", filter_path=f"nodes.*.ingest.pipelines.{title_pipeline.PIPELINE}.count")
    return sum(n["ingest"]["pipelines"][title_pipeline.PIPELINE]["count"] for n in found.get("nodes", {}).values())


@secured
def test_the_copy_skips_the_title_pipeline_that_later_writes_run(opensearch_cluster, index_name):
    """The copy's documents already carry what the title pipeline writes (Python builds
    them): sending them through it only cost indexing speed. Writes after the swap run it.
    (OpenSearch: the local Elasticsearch node cannot run the pipeline at all.)"""
    cluster = opensearch_cluster
    _ingest(cluster, index_name)
    before = _title_pipeline_runs(cluster)

    result = sync_keywords(cluster, index_name, {i: ["k"] for i in ITEMS}, 1, "m", progress=False)

    assert _title_pipeline_runs(cluster) == before and result.documents == len(ITEMS)
    assert all(doc["id"] == doc_id and doc["cogr_keywords"][0] == "k" for doc_id, doc in _docs(cluster, result.index).items())
    cluster.client.index(index=index_name, id="new", body={"title": "New Lamp"}, refresh=True)
    assert _title_pipeline_runs(cluster) == before + 1
    assert cluster.client.get(index=index_name, id="new")["_source"]["cogr_keywords"] == ["new lamp"]


@secured
def test_crash_after_verify_before_swap_is_swapped_by_the_rerun(cluster, index_name, monkeypatch):
    source = _ingest(cluster, index_name)
    keywords = {i: ["k"] for i in ITEMS}

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed before the swap")

    with monkeypatch.context() as patch:
        patch.setattr("cogr_search.cluster.sync.swap_alias", crash)
        with pytest.raises(KeyboardInterrupt):
            sync_keywords(cluster, index_name, keywords, 1, "m", progress=False)
    crashed = f"{index_name}--r1-2"
    assert alias_target(cluster, index_name) == source and sync_meta(cluster, crashed)["state"] == "writing"

    result = sync_keywords(cluster, index_name, keywords, 1, "m", progress=False)

    assert result.resumed and result.index == crashed and alias_target(cluster, index_name) == crashed
    assert _names(cluster, index_name) == [source, crashed] and sync_meta(cluster, crashed)["state"] == "complete"
    again = sync_keywords(cluster, index_name, keywords, 1, "m", progress=False)
    assert again.unchanged and again.with_keywords == 3 and _names(cluster, index_name) == [source, crashed]


@secured
def test_crash_after_swap_before_its_record_leaves_writes_open_and_the_rerun_records_it(cluster, index_name,
                                                                                         monkeypatch):
    """`complete` is written after the freeze: a sync killed just before it has swapped and
    lifted the block; the rerun of the same sync finds its version served and records it."""
    source = _ingest(cluster, index_name)
    keywords = {i: ["k"] for i in ITEMS}
    real = sync_module._set_sync_meta

    def crash_on_complete(cluster_, index, meta):
        if meta["state"] == "complete":
            raise KeyboardInterrupt("killed before the complete record")
        real(cluster_, index, meta)

    with monkeypatch.context() as patch:
        patch.setattr("cogr_search.cluster.sync._set_sync_meta", crash_on_complete)
        with pytest.raises(KeyboardInterrupt):
            sync_keywords(cluster, index_name, keywords, 1, "m", progress=False)
    swapped = f"{index_name}--r1-2"
    assert alias_target(cluster, index_name) == swapped and not write_blocked(cluster, source)
    assert sync_meta(cluster, swapped)["state"] == "writing"

    again = sync_keywords(cluster, index_name, keywords, 1, "m", progress=False)

    assert again.unchanged and _names(cluster, index_name) == [source, swapped]
    assert sync_meta(cluster, swapped)["state"] == "complete"


@secured
def test_an_interrupted_copy_is_resumed_and_an_abandoned_one_deleted(cluster, index_name):
    source = _ingest(cluster, index_name)
    keywords = {i: ["k"] for i in ITEMS}
    meta = {"state": "writing", "source": source, "round": 2, "model": "m",
            "fingerprint": keywords_fingerprint(keywords, SyncConfig())}
    crashed = _fresh_target(cluster, index_name, source, 2, meta)
    cluster.client.index(index=crashed.name, id="p1", body={"id": "p1", "title": "half written"})

    result = sync_keywords(cluster, index_name, keywords, 2, "m", progress=False)

    assert result.resumed and result.index == crashed.name
    assert _docs(cluster, index_name)["p1"]["title"] == ITEMS["p1"][0]
    abandoned = _fresh_target(cluster, index_name, result.index, 3, {**meta, "source": result.index, "round": 3})
    other = sync_keywords(cluster, index_name, {i: ["other"] for i in ITEMS}, 3, "m", progress=False)
    assert other.deleted_versions == [abandoned.name] and not other.resumed
    assert _names(cluster, index_name) == [source, crashed.name, other.index]


@secured
def test_rejected_documents_stop_the_sync_before_the_swap(cluster, index_name):
    source = _ingest(cluster, index_name)
    cluster.client.indices.put_mapping(index=source, body={"properties": {"brand": {"type": "keyword"}}})
    cluster.client.index(index=source, id="p2", body={"id": "p2", "title": "Pillow", "brand": "acme"}, refresh=True)

    with pytest.raises(SyncRejected, match=r"1 document\(s\) rejected, first 'p2': strict_dynamic_mapping_exception"):
        sync_keywords(cluster, index_name, {i: ["k"] for i in ITEMS}, 1, "m", progress=False)

    assert alias_target(cluster, index_name) == source and _names(cluster, index_name) == [source]
    assert not write_blocked(cluster, source)


@secured
def test_prune_keeps_newest_versions_and_the_aliased_one(cluster, index_name):
    _ingest(cluster, index_name)
    for round_ in (1, 2, 3):
        sync_keywords(cluster, index_name, {"p1": [f"kw{round_}"]}, round_, "m", TITLE_ONLY, progress=False)
    assert len(versions(cluster, index_name)) == 4

    pruned = prune_versions(cluster, index_name, keep=2)

    assert pruned == [f"{index_name}--r0-1", f"{index_name}--r1-2"]
    assert _names(cluster, index_name) == [f"{index_name}--r2-3", f"{index_name}--r3-4"]
    assert alias_target(cluster, index_name) == f"{index_name}--r3-4"


@secured
def test_sync_command_refuses_in_one_line_and_takes_defaults_from_the_config(cluster_url, index_name, tmp_path: Path,
                                                                            cluster):
    _ingest(cluster, index_name)
    path = tmp_path / "kw.jsonl"
    path.write_text("".join(json.dumps({"id": i, "keywords": ["k"]}) + "\n" for i in ("p1", " p2 ")), encoding="utf-8")
    runner = CliRunner()
    base = ["sync", "--index", index_name, "--item-keywords", str(path), "--opensearch-url", cluster_url]

    refused = runner.invoke(cli, base)
    assert refused.exit_code == 1
    assert "keywords cover 2 of 3 items" in refused.output and "Traceback" not in refused.output

    done = runner.invoke(cli, [*base, "--missing", "title-only", "--json"])
    assert done.exit_code == 0, done.output
    payload = json.loads(done.stdout)
    assert (payload["with_keywords"], payload["title_only"], payload["documents"]) == (2, 1, 3)
    assert "are refused for the final catch-up and the swap" in done.stderr

    help_text = runner.invoke(cli, ["sync", "--help"]).output
    for name in ("keep", "k_max", "missing", "chunk_size", "in_flight"):
        assert f"default: {SyncConfig.model_fields[name].default}" in help_text.replace("\n", " ").replace("  ", " ")


@pytest.fixture()
def flaky_url(cluster_url: str):
    """A real proxy process that fails the first `_search` (503) and `_bulk` (429, 503) requests."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("flaky_proxy.py")), cluster_url,
         "_search:503:2", "_bulk:429:1", "_bulk:503:1"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def test_scans_and_bulk_writes_retry_transient_failures(cluster, index_name, flaky_url):
    source = _ingest(cluster, index_name)
    flaky = Cluster(load_settings(opensearch_url=flaky_url, opensearch_retry_max_wait_s=0.2), flaky_url)

    result = sync_keywords(flaky, index_name, {i: ["k"] for i in ITEMS}, 1, "m", progress=False)

    assert result.documents == 3 and alias_target(cluster, index_name) == result.index != source
    failed = json.loads(urllib.request.urlopen(f"{flaky_url}/__failed", timeout=10).read())
    assert failed == {"_search": 2, "_bulk": 2}


@secured
def test_bulk_writes_with_requests_in_flight_count_every_chunk_and_failure(cluster, index_name):
    """The copy's bulk loop with several requests at once: chunks complete in any order,
    and still every document is written or reported, and every chunk seen once."""
    from cogr_search.cluster.bulk import bulk_write

    index = f"{index_name}--r0-1"
    cluster.client.indices.create(index=index, body={"mappings": {"dynamic": "strict", "properties": {"id": {"type": "keyword"}}}})
    docs = [{"id": f"d{n}", **({"extra": 1} if n == 777 else {})} for n in range(1000)]
    chunks: list[int] = []

    result = bulk_write(cluster, ({"_index": index, "_id": d["id"], "_source": d} for d in docs), chunk_size=50,
                        on_chunk=lambda chunk: chunks.append(chunk.sent), in_flight=4)

    assert (result.created, [f.id for f in result.failures]) == (999, ["d777"])
    assert chunks == [50] * 20
    cluster.client.indices.refresh(index=index)
    assert cluster.client.count(index=index)["count"] == 999


def test_a_version_created_behind_a_lost_answer_is_accepted_on_retry(cluster, cluster_url, index_name):
    """The create succeeds on the server, its answer is lost (503), the retry finds the
    index: still a created version, checked like any other."""
    from cogr_search.cluster.indices import create_version, versions

    _ingest(cluster, index_name)
    marker = f"{index_name}--r1-"  # the first request naming the new version is its create
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("flaky_proxy.py")), cluster_url,
                             f"{marker}:503:1:after"], stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{int(proc.stdout.readline())}"
        flaky = Cluster(load_settings(opensearch_url=url, opensearch_retry_max_wait_s=0.2), url)
        version = create_version(flaky, index_name, 1)
        failed = json.loads(urllib.request.urlopen(f"{url}/__failed", timeout=10).read())
    finally:
        proc.kill()
        proc.wait()
    assert version.name.startswith(marker) and failed == {marker: 1}
    assert version.name in [v.name for v in versions(cluster, index_name)]


@secured
def test_sync_from_a_run_refuses_incomplete_rounds_and_keywords(cluster_url, index_name, tmp_path: Path, cluster):
    from cogr_search.runs.keyword_files import write_keyword_file
    from cogr_search.runs.run_dir import RunDir

    _ingest(cluster, index_name)
    run = RunDir.create("r", tmp_path)
    run.write_config({"data": "", "model": "m", "k_max": 30})
    write_keyword_file(run.item_keywords_path(1), [("p1", ["oak"]), ("p2", ["pillow"])])
    run.mark_done("round-1", weights_sha256={"item": "ab" * 32, "query": "cd" * 32})
    runner = CliRunner()
    base = ["sync", "--index", index_name, "--run", "r", "--runs-dir", str(tmp_path), "--opensearch-url", cluster_url]

    not_done = runner.invoke(cli, [*base, "--round", "2"])
    assert not_done.exit_code == 1 and "round 2 is not complete (complete: 1)" in not_done.output
    partial = runner.invoke(cli, base)
    assert partial.exit_code == 1 and "keywords cover 2 of 3 items" in partial.output
    done = runner.invoke(cli, [*base, "--missing", "keep", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["index"] == f"{index_name}--r1-2"
    assert _docs(cluster, index_name)["p1"]["cogr_model"] == "r+r1+" + "ab" * 6


def test_the_keywords_fingerprint_ignores_order_and_sees_every_change() -> None:
    """A rerun of the same sync finds its version by this fingerprint: the same keywords
    in any order (and as tuples or lists) must match, any other keywords or options not."""
    keywords = {"p1": ["oak table", "table"], "p2": ["lamp"], "p3": []}
    same = keywords_fingerprint(keywords)
    assert keywords_fingerprint(dict(reversed(list(keywords.items())))) == same
    assert keywords_fingerprint({"p1": ("oak table", "table"), "p2": ("lamp",), "p3": ()}) == same
    for other in ({**keywords, "p1": ["table", "oak table"]}, {**keywords, "p3": ["x"]}, {"p1": keywords["p1"]},
                  {**keywords, "p4": []}, {"p1": ["oak", "table table"], "p2": ["lamp"], "p3": []}):
        assert keywords_fingerprint(other) != same
    assert keywords_fingerprint(keywords, SyncConfig(k_max=5)) != same
    assert keywords_fingerprint(keywords, SyncConfig(missing="keep")) != same
