"""Expansion inside the cluster: the run's students stored in the cluster and run by the
OpenSearch plugin, with no expansion service anywhere (issue 36).

On a real node (the stock distribution with the plugin zip), with a run whose round has
students (tests/student_support.py's keyword run, distilled):

- `index create --pipelines --run RUN` (no --service-url) stores both students as chunk
  documents and points both processors at them;
- ingest through the pipeline writes, for every item of the sample catalog, exactly the
  item student's keywords after `representation`, and the student's `cogr_model` tag;
- 20 of 20 sample queries through `?search_pipeline=` return the Python API's hits
  (`CogrSearch.from_run`: the query student in this process), ids and scores, in order;
- a missing, corrupt or oversized model: searches fall back to the plain query, with the
  reason in `ext.cogr`; ingest fails exactly the batch's documents, each with the reason.

The search and ingest tests run on both OpenSearch lines.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.pipelines import PipelineConfig, StudentModels, install_pipelines
from cogr_search.cluster.student_store import STUDENT_INDEX, chunk_documents
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.data.subset import judged_subset, write_beir
from cogr_search.generators.students.distill import open_students
from cogr_search.generators.students.model import item_text
from cogr_search.keywords import representation
from cogr_search.runs.keyword_files import read_keyword_file, write_keyword_file
from cogr_search.serve.client import CogrSearch
from tests.conftest import both_opensearch_lines, connect_to
from tests.requirements_check import shared_data_set
from tests.student_support import make_keyword_run

pytestmark = [pytest.mark.opensearch]

SAMPLE_QUERIES = 20


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    run = make_keyword_run(tmp_path_factory.mktemp("incluster-runs"), "incluster")
    result = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1"])
    assert result.exit_code == 0, result.output
    return run


@pytest.fixture(scope="module")
def cluster(opensearch_url: str) -> Cluster:
    return connect_to(opensearch_url)


@pytest.fixture(scope="module")
def deployed(cluster: Cluster, opensearch_url: str, run) -> Iterator[str]:  # noqa: ANN001
    """An alias created with the service-free pipelines, the sample catalog ingested through them."""
    alias = "t-incluster"
    result = CliRunner().invoke(cli, ["index", "create", "--index", alias, "--pipelines", "--run", str(run.root),
                                      "--ingest-pipeline", "t-ic-ingest", "--search-pipeline", "t-ic",
                                      "--batch-size", "16", "--cluster-url", opensearch_url])
    assert result.exit_code == 0, result.output
    assert "in the cluster" in result.output and "student item:" in result.output, result.output
    items = list(load_dataset(sample_catalog_path()).items.values())
    report = ingest_items(cluster, alias, items, chunk_size=64, progress=False, pipeline="t-ic-ingest")
    assert report.failed == 0, report.failures
    cluster.call(cluster.client.indices.refresh, index=alias)
    yield alias
    for pipeline in ("t-ic-ingest", "t-ic-bad-ingest", "t-ic-gone-ingest"):
        cluster.client.transport.perform_request("DELETE", f"/_ingest/pipeline/{pipeline}", params={"ignore": 404})
    for pipeline in ("t-ic", "t-ic-bad", "t-ic-gone"):
        cluster.client.transport.perform_request("DELETE", f"/_search/pipeline/{pipeline}", params={"ignore": 404})
    cluster.client.indices.delete(index=f"{alias}--r*", ignore=[404])


def _search(cluster: Cluster, alias: str, body: dict, pipeline: str | None = None) -> dict:
    params = {"search_pipeline": pipeline} if pipeline else {}
    return cluster.call(cluster.client.search, index=alias, body=body, params=params)


def _ranked(response: dict) -> list[tuple[str, float]]:
    return [(hit["_id"], hit["_score"]) for hit in response["hits"]["hits"]]


@both_opensearch_lines
def test_ingested_documents_carry_the_item_students_keywords(cluster: Cluster, deployed: str, run) -> None:  # noqa: ANN001
    students = open_students(run, 0, ("item",))
    student = students.sides["item"]
    items = load_dataset(sample_catalog_path()).items
    hits = cluster.call(cluster.client.search, index=deployed, body={"query": {"match_all": {}}, "size": 1000})["hits"]["hits"]
    assert len(hits) == len(items) == 359
    with_keywords = 0
    for hit in hits:
        doc = hit["_source"]
        item = items[doc["id"]]
        keywords = student.keywords(item_text(item.title, item.description))
        with_keywords += bool(keywords)
        assert doc["cogr_keywords"] == representation(keywords, item.title, student.k_max), item.id
        assert (doc["cogr_model"], doc["cogr_round"]) == (students.tag("item"), 0)
    assert with_keywords > len(items) / 2


@both_opensearch_lines
def test_searches_return_the_python_students_hits(cluster: Cluster, deployed: str, run) -> None:  # noqa: ANN001
    api = CogrSearch.from_run(cluster.client, run.root, index=deployed)
    queries = [q.text for q in load_dataset(sample_catalog_path()).queries.values()][:SAMPLE_QUERIES]
    same = with_hits = 0
    for text in queries:
        expected = api.search(text, size=20)
        response = _search(cluster, deployed, {"query": {"match": {"title": text}}, "size": 20}, pipeline="t-ic")
        status = response["ext"]["cogr"]
        assert status["expanded"] is True and status["fallback"] is False, status
        assert status["queries"] == [{"text": text, "keywords": expected.representation}], text
        assert [h[0] for h in _ranked(response)] == [h.id for h in expected.hits], text
        assert [h[1] for h in _ranked(response)] == pytest.approx([h.score for h in expected.hits]), text
        same += 1
        with_hits += bool(expected.hits)
    # every sample query the same; most have hits to compare (the rule-made keywords of
    # tests/student_support.py leave a few queries without any)
    assert same == SAMPLE_QUERIES and with_hits >= SAMPLE_QUERIES // 2, (same, with_hits)


def _store_bad(cluster: Cluster, model_id: str, how: str) -> None:
    """Chunk documents of a model that cannot load: a wrong sha256, or a size past the limit."""
    docs = chunk_documents(model_id, "bad", 0, "query", json.dumps({"format": "cogr-student"}).encode())
    for doc_id, body in docs:
        if how == "corrupt":
            body["sha256"] = hashlib.sha256(b"something else").hexdigest()
        else:
            body["bytes"] = 10**12
        cluster.call(cluster.client.index, index=STUDENT_INDEX, id=doc_id, body=body, params={"refresh": "true"})


@pytest.mark.parametrize("how, reason", [("missing", "no chunks"), ("corrupt", "corrupt: sha256"),
                                         ("oversized", "oversized")])
def test_a_model_that_cannot_load_falls_back_marked_and_fails_ingest_batches(cluster: Cluster, deployed: str,
                                                                              how: str, reason: str) -> None:
    model_id = f"bad+r0+student-{how}"
    if how != "missing":
        _store_bad(cluster, model_id, how)
    models = StudentModels(run="bad", round=0, query_model=model_id, item_model=model_id, k_max=30)
    install_pipelines(cluster, PipelineConfig(service_url=None, students=models, batch_size=3),
                      "t-ic-bad-ingest", "t-ic-bad")
    body = {"query": {"match": {"title": "oak dining table"}}, "size": 10}
    response = _search(cluster, deployed, body, pipeline="t-ic-bad")
    assert _ranked(response) == _ranked(_search(cluster, deployed, body))
    status = response["ext"]["cogr"]
    assert status["expanded"] is False and status["fallback"] is True, status
    assert model_id in status["reason"] and reason in status["reason"], status
    items = list(load_dataset(sample_catalog_path()).items.values())[:5]
    report = ingest_items(cluster, "t-ic-bad-target", items, chunk_size=5, progress=False, pipeline="t-ic-bad-ingest")
    assert (report.failed, report.documents_in_index) == (5, 0), report.as_dict()
    assert all(reason in f and "batch of" in f for f in report.failures), report.failures
    cluster.client.indices.delete(index="t-ic-bad-target--r*", ignore=[404])


def _bench(*args: str) -> dict:
    outcome = CliRunner().invoke(cli, ["bench", *args, "--json"])
    assert outcome.exit_code == 0, outcome.output
    return json.loads(outcome.stdout)


def test_bench_times_bm25_beside_the_in_cluster_pipelines(cluster: Cluster, deployed: str,
                                                          opensearch_url: str) -> None:
    """`bench search --in-cluster` and `bench ingest --enrich` measure the service-free
    route (no service is running anywhere here) and check that it expanded what it timed."""
    searched = _bench("search", "--index", deployed, "--in-cluster", "--pipeline", "t-ic", "--max-queries", "5",
                      "--passes", "2", "--cluster-url", opensearch_url)
    assert searched["settings"]["queries"] == 5 and searched["settings"]["pipeline"] == "t-ic"
    assert searched["in_cluster_p50_ms"] > 0 and searched["bm25_p50_ms"] > 0
    assert searched["in_cluster_vs_bm25_p50"] == pytest.approx(
        searched["in_cluster_p50_ms"] / searched["bm25_p50_ms"], rel=0.2)
    enriched = _bench("ingest", "--data", str(sample_catalog_path()), "--max-items", "100",
                      "--enrich", "t-ic-ingest", "--cluster-url", opensearch_url)
    (figures,) = enriched["clusters"]
    assert enriched["docs"] == figures["enriched_with_keywords"] == 100
    assert figures["enriched_docs_per_s"] > 0 and figures["plain_docs_per_s"] > 0
    assert not cluster.client.indices.exists(index="bench-enriched-bulk")


def test_bench_refuses_to_time_a_pipeline_that_falls_back(cluster: Cluster, deployed: str,
                                                          opensearch_url: str) -> None:
    """A pipeline whose model cannot load answers fast with plain BM25: timing it would
    report the fallback as the student's speed."""
    models = StudentModels(run="gone", round=0, query_model="gone+r0+student-none",
                           item_model="gone+r0+student-none", k_max=30)
    install_pipelines(cluster, PipelineConfig(service_url=None, students=models, batch_size=3),
                      "t-ic-gone-ingest", "t-ic-gone")
    outcome = CliRunner().invoke(cli, ["bench", "search", "--index", deployed, "--in-cluster", "--pipeline",
                                       "t-ic-gone", "--max-queries", "2", "--cluster-url", opensearch_url])
    assert outcome.exit_code == 1
    assert "did not expand" in outcome.output and "gone+r0+student-none" in outcome.output, outcome.output
    outcome = CliRunner().invoke(cli, ["bench", "ingest", "--data", str(sample_catalog_path()), "--max-items", "10",
                                       "--enrich", "t-ic-gone-ingest", "--cluster-url", opensearch_url])
    assert outcome.exit_code == 1 and "raw _bulk failed" in outcome.output, outcome.output
    outcome = CliRunner().invoke(cli, ["bench", "search", "--index", deployed, "--cluster-url", opensearch_url])
    assert outcome.exit_code != 0 and "--in-cluster" in outcome.output, outcome.output


@contextlib.contextmanager
def _deployment(cluster: Cluster, opensearch_url: str, run_root: Path, alias: str, pipeline: str) -> Iterator[None]:
    """`index create --pipelines --run` of `alias`, with the ingest pipeline `<pipeline>-ingest`
    and the search pipeline `pipeline`; both and the alias's versions removed afterwards."""
    result = CliRunner().invoke(cli, ["index", "create", "--index", alias, "--pipelines", "--run", str(run_root),
                                      "--ingest-pipeline", f"{pipeline}-ingest", "--search-pipeline", pipeline,
                                      "--cluster-url", opensearch_url])
    assert result.exit_code == 0, result.output
    try:
        yield
    finally:
        cluster.client.transport.perform_request("DELETE", f"/_ingest/pipeline/{pipeline}-ingest", params={"ignore": 404})
        cluster.client.transport.perform_request("DELETE", f"/_search/pipeline/{pipeline}", params={"ignore": 404})
        cluster.client.indices.delete(index=f"{alias}--r*", ignore=[404])


WIDE_K_MAX = 40
SHARED_KEYWORDS = [f"shared keyword {n}" for n in range(28)]


@pytest.fixture(scope="module")
def wide_run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    """A run trained at k_max 40 whose students give sets longer than the plugin's default
    k_max (30) on the item side: every teacher set holds the same 28 keywords beside the
    text's own, so the classifier's top 30 plus the copied n-grams pass 30."""
    run = make_keyword_run(tmp_path_factory.mktemp("incluster-wide"), "incluster-wide", k_max=WIDE_K_MAX)
    for path in (run.item_keywords_path(0), run.query_keywords_path(0)):
        rows = read_keyword_file(path)
        write_keyword_file(path, ((key, [*keywords, *SHARED_KEYWORDS][:WIDE_K_MAX]) for key, keywords in rows.items()))
    result = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1"])
    assert result.exit_code == 0, result.output
    return run


def test_the_pipelines_serve_at_the_runs_k_max(cluster: Cluster, opensearch_url: str, wide_run) -> None:  # noqa: ANN001
    """A run's k_max other than the plugin's default reaches both processors: documents hold
    the Python item student's sets at k_max 40, longer than 30, and queries expand as the
    Python API does."""
    alias = "t-incluster-wide"
    with _deployment(cluster, opensearch_url, wide_run.root, alias, "t-icw"):
        dataset = load_dataset(sample_catalog_path())
        items = list(dataset.items.values())[:40]
        report = ingest_items(cluster, alias, items, chunk_size=40, progress=False, pipeline="t-icw-ingest")
        assert report.failed == 0, report.failures
        cluster.call(cluster.client.indices.refresh, index=alias)
        student = open_students(wide_run, 0, ("item",)).sides["item"]
        assert student.k_max == WIDE_K_MAX
        hits = _search(cluster, alias, {"query": {"match_all": {}}, "size": 100})["hits"]["hits"]
        assert len(hits) == len(items)
        longest = 0
        for hit in hits:
            item = dataset.items[hit["_source"]["id"]]
            expected = representation(student.keywords(item_text(item.title, item.description)), item.title, WIDE_K_MAX)
            assert hit["_source"]["cogr_keywords"] == expected, item.id
            longest = max(longest, len(expected))
        assert longest > 31, longest  # past the default's 30 (+ the title's own form)
        api = CogrSearch.from_run(cluster.client, wide_run.root, index=alias)
        for query in list(dataset.queries.values())[:5]:
            status = _search(cluster, alias, {"query": {"match": {"title": query.text}}}, pipeline="t-icw")["ext"]["cogr"]
            expected = api.representation(query.text)
            assert status["queries"] == [{"text": query.text, "keywords": expected}], query.text
        # the query student's retrieval objective keeps its sets short, so the search side's
        # k_max is checked where the node holds it: the stored processor config
        stored = cluster.client.transport.perform_request("GET", "/_search/pipeline/t-icw")["t-icw"]
        assert stored["request_processors"][0]["cogr_expand"]["k_max"] == WIDE_K_MAX


@pytest.fixture(scope="module")
def home_depot_run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - (RunDir, Path)
    """The keyword run on real Home Depot text: 150 judged queries and their items, read from
    ../shared/data at run time (never committed), distilled."""
    source = shared_data_set("homedepot")
    root = tmp_path_factory.mktemp("incluster-homedepot")
    catalog = root / "homedepot-subset"
    write_beir(judged_subset(load_dataset(source), 150, seed=0), catalog, "test_plugin_students: 150 Home Depot queries")
    run = make_keyword_run(root / "runs", "homedepot", data=catalog)
    result = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1"])
    assert result.exit_code == 0, result.output
    return run, catalog


def test_the_plugin_gives_the_python_students_keywords_and_hits_on_home_depot_text(
        cluster: Cluster, opensearch_url: str, home_depot_run) -> None:  # noqa: ANN001
    """The in-cluster equality on real product text (units, fractions, symbols): every
    ingested item holds the Python item student's keywords, and 20 of 20 queries through
    the search pipeline return the Python API's hits, expanded."""
    run, catalog = home_depot_run
    alias = "t-incluster-hd"
    with _deployment(cluster, opensearch_url, run.root, alias, "t-ichd"):
        dataset = load_dataset(catalog)
        items = list(dataset.items.values())
        report = ingest_items(cluster, alias, items, chunk_size=64, progress=False, pipeline="t-ichd-ingest")
        assert report.failed == 0, report.failures
        cluster.call(cluster.client.indices.refresh, index=alias)
        student = open_students(run, 0, ("item",)).sides["item"]
        hits = _search(cluster, alias, {"query": {"match_all": {}}, "size": 10_000})["hits"]["hits"]
        assert len(hits) == len(items) > 300
        for hit in hits:
            item = dataset.items[hit["_source"]["id"]]
            expected = representation(student.keywords(item_text(item.title, item.description)), item.title,
                                      student.k_max)
            assert hit["_source"]["cogr_keywords"] == expected, item.id
        api = CogrSearch.from_run(cluster.client, run.root, index=alias)
        for query in list(dataset.queries.values())[:SAMPLE_QUERIES]:
            expected = api.search(query.text, size=20)
            response = _search(cluster, alias, {"query": {"match": {"title": query.text}}, "size": 20}, pipeline="t-ichd")
            status = response["ext"]["cogr"]
            assert status["expanded"] is True, status
            assert status["queries"] == [{"text": query.text, "keywords": expected.representation}], query.text
            assert [h[0] for h in _ranked(response)] == [h.id for h in expected.hits], query.text
