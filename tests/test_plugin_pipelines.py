"""The OpenSearch plugin end to end: a real node with cogr-plugin on its classpath and the
real `cogr-search serve` process (base CPU model) on a loopback port.

- app-style search: a plain `match` with `?search_pipeline=cogr` returns the same hits, in
  the same order, as the Python API's expanded query for the same text (also with the
  app's own filter, size and from);
- the ingest pipeline fills `cogr_keywords` and provenance; documents that already carry
  the service's current model are not sent again (the service's /health counters);
- service down or slow: searches answer through the fallback, marked in `ext.cogr`;
  ingest reports exactly the failed documents and loses none;
- config errors name the processor, tag and property; the CLI wires it all.

The tests of what differs between the plugin's two builds (ingest results through the
per-line `IngestDocuments` adapter, the search pipeline's hits) run on both OpenSearch
lines (`@both_opensearch_lines`: 2.19 and 3.x); the rest on 2.19.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import Item, load_dataset, sample_catalog_path
from cogr_search.errors import CogrError
from cogr_search.cluster.client import Cluster
from cogr_search.connect import connect
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.pipelines import PipelineConfig, install_pipelines
from cogr_search.cluster.documents import item_keywords as document_keywords
from cogr_search.serve import process
from cogr_search.serve.client import CogrSearch
from cogr_search.serve.process import ServiceProcess
from cogr_search.settings import load_settings
from tests.conftest import both_opensearch_lines, free_port
from tests.serve_support import make_base_run, subprocess_env

pytestmark = [pytest.mark.opensearch, pytest.mark.model]

ITEMS = 12  # items generated once for the module; the base model costs ~1 s per item on 2 cores
EXTRA_KEYWORDS = [[], ["linen"], ["pillow", "ivory"], ["lamp", "table", "ceramic"], ["home decor"]]
SYNCED = 2 * len(EXTRA_KEYWORDS)  # documents written directly, with keywords, next to the pipeline's
# Item titles (a query equal to a title shares at least that keyword with the item, whatever
# the base model writes) and free text.
QUERIES = ["Linen Throw Pillow - Ivory, 18 x 18 in | Brightwater", "Hartwell 7 qt White Enameled Cast Iron Dutch Oven",
           "linen throw pillow", "ceramic table lamp"]


@pytest.fixture(scope="module", autouse=True)
def _drop_test_pipelines(cluster: Cluster) -> Iterator[None]:
    """Every pipeline these tests create is named t-*; remove them from the cluster afterwards."""
    yield
    cluster.client.transport.perform_request("DELETE", "/_ingest/pipeline/t-*", params={"ignore": 404})
    cluster.client.transport.perform_request("DELETE", "/_search/pipeline/t-*", params={"ignore": 404})


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path):  # noqa: ANN201 - RunDir
    """Generators that write keyword lists of noise: the path is checked, not the keywords' meaning."""
    return make_base_run(tmp_path_factory.mktemp("plugin-runs"), model=tiny_model)


@pytest.fixture(scope="module")
def service(run) -> Iterator[ServiceProcess]:  # noqa: ANN001
    # Generous start deadline and generation timeout: the 2 cores are shared with training,
    # and loading the model or a cold batch can then take minutes.
    with process.ServiceProcess(run.root, "--max-wait-ms", "20", "--generation-timeout", "600",
                                env=subprocess_env(), deadline_s=600) as service_process:
        yield service_process


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return list(load_dataset(sample_catalog_path()).items.values())[:ITEMS]


PATIENT_TIMEOUT_S = 600
SLOW = "540s"  # the ingest pipelines' timeout where the service really generates


@pytest.fixture(scope="module")
def cluster(opensearch_url: str) -> Cluster:
    """This module's client waits longer than the default 30 s: a bulk through the pipeline
    waits for a cold generation, which on the shared 2-core CPU can take that long."""
    return connect(load_settings(opensearch_url=opensearch_url, opensearch_timeout_s=PATIENT_TIMEOUT_S), url=opensearch_url)


@pytest.fixture(scope="module")
def enriched(cluster: Cluster, service: ServiceProcess, items: list[Item], run) -> Iterator[str]:  # noqa: ANN001
    """An alias loaded through `cogr-ingest` (batch_size 3), with both pipelines installed."""
    alias = "t-plugin-enriched"
    install_pipelines(cluster, PipelineConfig(service_url=service.url, batch_size=3, ingest_timeout=SLOW),
                      "t-cogr-ingest", "t-cogr")
    report = ingest_items(cluster, alias, items, chunk_size=6, progress=False, pipeline="t-cogr-ingest")
    assert report.failed == 0, report.failures
    # Documents as sync writes them, sharing the free-text queries as a keyword: whatever the
    # base model generates, those queries retrieve several documents to rank.
    bulk: list[dict] = []
    for n, (query, extra) in enumerate((q, e) for q in QUERIES[2:] for e in EXTRA_KEYWORDS):
        doc_id = f"kw-{n}"
        bulk += [{"index": {"_index": alias, "_id": doc_id}},
                 {"id": doc_id, "title": f"{query} {n}", "description": "", "cogr_round": 0, "cogr_model": run.model_tag(0),
                  "cogr_keywords": document_keywords([query, *extra], f"{query} {n}")}]
    assert not cluster.call(cluster.client.bulk, body=bulk, params={"refresh": "true"})["errors"]
    yield alias
    cluster.client.indices.delete(index=f"{alias}--r*", ignore=[404])
    cluster.client.indices.delete_index_template(name=f"cogr-{alias}", ignore=[404])


def _search(cluster: Cluster, alias: str, body: dict, pipeline: str | None = None) -> dict:
    params = {"search_pipeline": pipeline} if pipeline else {}
    return cluster.call(cluster.client.search, index=alias, body=body, params=params)


def _ranked(response: dict) -> list[tuple[str, float]]:
    return [(hit["_id"], hit["_score"]) for hit in response["hits"]["hits"]]


def _counters(service: ServiceProcess) -> dict:
    return service.health()["counters"]["item"]


# --------------------------------------------------------------------------- ingest


@both_opensearch_lines
def test_ingest_pipeline_fills_keywords_and_provenance(cluster: Cluster, service: ServiceProcess, run, enriched: str,
                                                       items: list[Item]) -> None:  # noqa: ANN001
    item = items[3]
    source = cluster.call(cluster.client.get, index=enriched, id=item.id)["_source"]
    status, body = service.post("/v1/expand/item", {"items": [{"id": item.id, "title": item.title, "description": item.description}]})
    assert status == 200, body
    assert source["cogr_keywords"] == document_keywords(body["keywords"][0], item.title)
    assert source["cogr_model"] == run.model_tag(0) and source["cogr_round"] == 0
    assert source["cogr_updated_at"].startswith("20")
    assert (source["title"], source["description"]) == (item.title, item.description)
    with_keywords = cluster.call(cluster.client.count, index=enriched, body={"query": {"exists": {"field": "cogr_model"}}})
    assert with_keywords["count"] == len(items) + SYNCED


def test_documents_of_the_current_model_are_not_sent_again(cluster: Cluster, service: ServiceProcess, enriched: str,
                                                           run) -> None:  # noqa: ANN001
    before = _counters(service)
    # Re-run every document through the pipeline: all carry the current model, none is sent.
    result = cluster.call(cluster.client.update_by_query, index=enriched, params={"pipeline": "t-cogr-ingest", "refresh": "true"})
    assert result["updated"] == ITEMS + SYNCED and not result["failures"]
    assert _counters(service)["texts"] == before["texts"]
    # A bulk of a stale and a new document, then 2 of the current model (batch_size 3): one
    # call, carrying only the stale and the new one.
    current = cluster.call(cluster.client.get, index=enriched, id="hg-0001")["_source"]
    stale = dict(current, cogr_model="another-run-r0-0000")
    bulk = []
    for doc_id, doc in [("stale-1", stale), ("new-1", {"id": "new-1", "title": "Walnut Bookshelf", "description": ""}),
                        ("keep-1", current), ("keep-2", current)]:
        bulk += [{"index": {"_index": enriched, "_id": doc_id}}, doc]
    response = cluster.call(cluster.client.bulk, body=bulk, params={"pipeline": "t-cogr-ingest", "refresh": "true"})
    assert not response["errors"], response
    after = _counters(service)
    assert after["texts"] - before["texts"] == 2
    assert after["requests"] - before["requests"] == 1  # one batch, one call
    fresh = cluster.call(cluster.client.get, index=enriched, id="stale-1")["_source"]
    assert fresh["cogr_model"] == run.model_tag(0)
    for doc_id in ("keep-1", "keep-2", "stale-1", "new-1"):
        cluster.call(cluster.client.delete, index=enriched, id=doc_id, refresh=True)


@both_opensearch_lines
def test_a_failed_call_fails_exactly_its_batch_in_order_and_loses_none(cluster: Cluster, service: ServiceProcess,
                                                                       index_name: str) -> None:
    install_pipelines(cluster, PipelineConfig(service_url=service.url, batch_size=2, ingest_timeout=SLOW),
                      "t-batch2", "t-batch2-search")
    # The service refuses titles over 1,000 characters (413): the batch holding one fails as a whole.
    docs = [Item("b1", "Oak Side Table"), Item("b2", "Glass Vase"), Item("b3", "x" * 1200), Item("b4", "Wool Rug"),
            Item("b5", "Bath Towel"), Item("b6", "Desk Lamp")]
    report = ingest_items(cluster, index_name, docs, progress=False, pipeline="t-batch2")
    assert report.failed == 2 and report.created == 4, report.as_dict()
    assert sorted(f.split(":")[0] for f in report.failures) == ["b3", "b4"]
    assert all("cogr_keywords" in f and "413" in f for f in report.failures), report.failures
    assert report.documents_in_index == 4
    ids = {h["_id"] for h in _search(cluster, index_name, {"query": {"exists": {"field": "cogr_model"}}, "size": 10})["hits"]["hits"]}
    assert ids == {"b1", "b2", "b5", "b6"}


def test_service_down_ingest_reports_every_document_and_ignore_failure_keeps_them(cluster: Cluster,
                                                                                  index_name: str) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    install_pipelines(cluster, PipelineConfig(service_url=down, batch_size=3, ingest_timeout="2s"), "t-down", "t-down-search")
    docs = [Item(f"d{n}", f"Item number {n}") for n in range(5)]
    report = ingest_items(cluster, index_name, docs, progress=False, pipeline="t-down")
    assert (report.failed, report.indexed, report.documents_in_index) == (5, 0, 0)
    assert all(down in f for f in report.failures), report.failures
    install_pipelines(cluster, PipelineConfig(service_url=down, batch_size=3, ingest_timeout="2s", ignore_failure=True),
                      "t-down-ignore", "t-down-search")
    report = ingest_items(cluster, index_name, docs, progress=False, pipeline="t-down-ignore")
    assert (report.failed, report.created, report.documents_in_index) == (0, 5, 5)
    source = cluster.call(cluster.client.get, index=index_name, id="d2")["_source"]
    # only what ingest always writes (the title keyword), no provenance: the next enrichment redoes it
    assert source == {"id": "d2", "title": "Item number 2", "description": "", "cogr_keywords": ["item number 2"]}


def test_slow_service_ingest_fails_the_batch_with_the_timeout(cluster: Cluster, service: ServiceProcess,
                                                              index_name: str) -> None:
    # 50 ms is far below a cold generation: every document of the batch fails, none is lost.
    install_pipelines(cluster, PipelineConfig(service_url=service.url, batch_size=4, ingest_timeout="50ms"),
                      "t-slow", "t-slow-search")
    docs = [Item("s1", "Never Generated Before: Teak Shoe Rack"), Item("s2", "Never Generated Before: Jute Doormat")]
    report = ingest_items(cluster, index_name, docs, progress=False, pipeline="t-slow")
    assert (report.failed, report.documents_in_index) == (2, 0), report.as_dict()
    assert all("did not answer in time" in f for f in report.failures), report.failures


# --------------------------------------------------------------------------- search


@both_opensearch_lines
def test_search_pipeline_returns_the_python_api_hits_in_order(cluster: Cluster, service: ServiceProcess,
                                                              enriched: str) -> None:
    api = CogrSearch.from_service(cluster.client, service.url, index=enriched, timeout_s=PATIENT_TIMEOUT_S)
    compared = 0
    for text in QUERIES:
        expected = api.search(text, size=20)
        compared += len(expected.hits)
        response = _search(cluster, enriched, {"query": {"match": {"title": text}}, "size": 20}, pipeline="t-cogr")
        assert [h[0] for h in _ranked(response)] == [h.id for h in expected.hits], text
        assert [h[1] for h in _ranked(response)] == pytest.approx([h.score for h in expected.hits]), text
        status = response["ext"]["cogr"]
        assert status["expanded"] is True and status["fallback"] is False
        assert status["queries"] == [{"text": text, "keywords": expected.representation}]
    assert compared >= 2 * len(EXTRA_KEYWORDS) + 2, "too few hits for the comparison to mean anything"
    # The app's own filter, size and from are kept.
    text = QUERIES[0]
    app_filter = {"terms": {"id": [item for item in ("hg-0001", "hg-0002", "hg-0003", "hg-0004", "hg-0005")]}}
    expected = api.search(text, size=2, from_=1, filters=[app_filter])
    body = {"query": {"bool": {"must": [{"match": {"title": text}}], "filter": [app_filter]}}, "size": 2, "from": 1}
    response = _search(cluster, enriched, body, pipeline="t-cogr")
    assert [h[0] for h in _ranked(response)] == [h.id for h in expected.hits]
    assert response["hits"]["total"]["value"] == expected.total


def test_a_search_without_a_title_match_passes_through_marked(cluster: Cluster, enriched: str) -> None:
    body = {"query": {"match": {"description": "linen"}}, "size": 5}
    response = _search(cluster, enriched, body, pipeline="t-cogr")
    assert _ranked(response) == _ranked(_search(cluster, enriched, body))
    assert response["ext"]["cogr"]["expanded"] is False and response["ext"]["cogr"]["fallback"] is False


def test_service_down_or_slow_searches_fall_back_to_the_original_query_marked(cluster: Cluster, service: ServiceProcess,
                                                                              enriched: str) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    install_pipelines(cluster, PipelineConfig(service_url=down), "t-fb-ingest", "t-fb-down")
    # 50 ms is far below a cold generation on the CPU model: the service is "slow".
    install_pipelines(cluster, PipelineConfig(service_url=service.url, search_timeout="50ms"), "t-fb-ingest", "t-fb-slow")
    for pipeline, text, reason in [("t-fb-down", "oak table", down), ("t-fb-slow", "never asked before: velvet ottoman", "in time")]:
        body = {"query": {"match": {"title": text}}, "size": 10}
        response = _search(cluster, enriched, body, pipeline=pipeline)
        assert _ranked(response) == _ranked(_search(cluster, enriched, body)), pipeline
        status = response["ext"]["cogr"]
        assert status["expanded"] is False and status["fallback"] is True, status
        assert reason in status["reason"], status


def test_queries_the_service_refuses_fall_back_marked_and_blank_ones_are_not_sent(cluster: Cluster, service: ServiceProcess,
                                                                                  enriched: str) -> None:
    # 10,000 characters, over the service's 1,000-character limit (413); few tokens, so that
    # the original match stays under OpenSearch's 1,024-clause limit.
    long_text = ("velvetottoman" * 800)[:10_000]
    body = {"query": {"match": {"title": long_text}}, "size": 5}
    response = _search(cluster, enriched, body, pipeline="t-cogr")
    assert _ranked(response) == _ranked(_search(cluster, enriched, body))
    status = response["ext"]["cogr"]
    assert status["fallback"] is True and "413" in status["reason"], status
    before = service.health()["counters"]["query"]["requests"]
    response = _search(cluster, enriched, {"query": {"match": {"title": "   "}}}, pipeline="t-cogr")
    assert response["ext"]["cogr"]["expanded"] is False and response["ext"]["cogr"]["fallback"] is False
    assert service.health()["counters"]["query"]["requests"] == before


def test_config_errors_name_processor_tag_and_property(cluster: Cluster, service: ServiceProcess) -> None:
    with pytest.raises(CogrError) as err:
        install_pipelines(cluster, PipelineConfig(service_url=service.url, search_timeout="soon"), "t-bad-i", "t-bad-s")
    message = str(err.value)
    assert "cogr_expand" in message and "cogr-expand" in message and "timeout" in message and "soon" in message
    assert "\n" not in message


# --------------------------------------------------------------------------- CLI


def test_cli_index_create_with_default_pipelines_then_ingest_through_the_pipeline(
    cluster: Cluster, service: ServiceProcess, index_name: str, tmp_path: Path, opensearch_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COGR_OPENSEARCH_TIMEOUT_S", str(PATIENT_TIMEOUT_S))
    runner = CliRunner()
    base = ["--opensearch-url", opensearch_url]
    result = runner.invoke(cli, ["index", "create", "--index", index_name, "--pipelines", "--service-url", service.url,
                                 "--ingest-pipeline", "t-cli-ingest", "--search-pipeline", "t-cli", "--default-pipelines",
                                 "--ingest-timeout", SLOW,
                                 *base])
    assert result.exit_code == 0, result.output
    assert "t-cli-ingest" in result.output and "defaults:" in result.output
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text("".join(json.dumps({"id": f"c{n}", "title": t}) + "\n"
                               for n, t in enumerate(["Linen Throw Pillow", "Oak Dining Table", "Ceramic Table Lamp"])))
    result = runner.invoke(cli, ["ingest", str(catalog), "--index", index_name, "--columns", "id=id,title=title",
                                 "--enrich", "--pipeline", "t-cli-ingest", "--json", *base])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["created"] == 3 and report["enrich"] == {"pipeline": "t-cli-ingest", "documents_with_keywords": 3}
    # The index default: a plain app query, no ?search_pipeline, is expanded.
    response = _search(cluster, index_name, {"query": {"match": {"title": "linen throw pillow"}}})
    assert response["ext"]["cogr"]["expanded"] is True
    assert response["hits"]["hits"][0]["_id"] == "c0"
    missing = runner.invoke(cli, ["ingest", str(catalog), "--index", index_name, "--columns", "id=id,title=title",
                                  "--enrich", "--pipeline", "no-such-pipeline", *base])
    assert missing.exit_code != 0 and "no-such-pipeline" in missing.output and "Traceback" not in missing.output
