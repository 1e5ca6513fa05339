"""The Python API and the `search` and `ingest --enrich` commands on a real node, with the
expansion service as a real process and the real CPU model: enrichment fills keywords
and provenance once, the API sends DESIGN.md's expanded query with the caller's filters,
size, from and `_source`, explains matches, caches expansions, and the CLI agrees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.errors import CogrError
from cogr_search.keywords import normalize, representation
from cogr_search.cluster.query import keyword_query
from cogr_search.serve.client import CogrSearch
from tests.serve_support import ServiceProcess, make_base_run

pytestmark = [pytest.mark.opensearch, pytest.mark.model, pytest.mark.secured]

ITEMS = [
    {"id": "hg-1", "title": "Linen Throw Pillow - Ivory", "description": "An 18 x 18 in linen throw pillow."},
    {"id": "hg-2", "title": "Hartwell White Enameled Cast Iron Dutch Oven", "description": "For braising and bread."},
    {"id": "hg-3", "title": "Norrland Ceramic Table Lamp", "description": "A ceramic table lamp with a linen shade."},
    {"id": "hg-4", "title": "Oak Dining Table", "description": "A solid oak dining table for six."},
    {"id": "hg-5", "title": "Blue Velvet Accent Chair", "description": "A velvet accent chair in navy blue."},
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path):  # noqa: ANN201 - RunDir
    """Generators that write keyword lists of noise: the path is checked, not the keywords' meaning."""
    return make_base_run(tmp_path_factory.mktemp("search-runs"), model=tiny_model)


@pytest.fixture(scope="module")
def service(run):  # noqa: ANN001, ANN201
    with ServiceProcess(run, "--sides", "query") as process:
        yield process


def _invoke(args: list[str], cluster_url: str):  # noqa: ANN202 - click Result
    return CliRunner().invoke(cli, [*args, "--opensearch-url", cluster_url], catch_exceptions=True)


@pytest.fixture()
def enriched(index_name: str, cluster_url: str, run, tmp_path: Path, monkeypatch) -> str:  # noqa: ANN001
    monkeypatch.setenv("COGR_TORCH_THREADS", "1")
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    args = ["ingest", str(catalog), "--index", index_name, "--enrich", "--run", str(run.root), "--json"]
    first = _invoke(args, cluster_url)
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)["enrich"]
    assert (report["generated"], report["written"], report["skipped"], report["failed"]) == (5, 5, 0, 0)
    assert report["model"] == run.model_tag(0)
    return index_name


def test_ingest_enrich_fills_keywords_and_provenance_once(enriched, cluster, cluster_url, run, tmp_path) -> None:
    docs = {hit["_id"]: hit["_source"] for hit in cluster.client.search(index=enriched, body={"size": 10})["hits"]["hits"]}
    assert sorted(docs) == [item["id"] for item in ITEMS]
    for item in ITEMS:
        doc = docs[item["id"]]
        assert doc["cogr_model"] == run.model_tag(0) and doc["cogr_round"] == 0 and doc["cogr_updated_at"]
        assert normalize(item["title"]) in doc["cogr_keywords"]  # S_i ∪ {normalize(title)}
        assert doc["title"] == item["title"]

    # A rerun generates nothing: every document already carries this model's keywords.
    again = _invoke(["ingest", str(tmp_path / "catalog.jsonl"), "--index", enriched, "--enrich", "--run", str(run.root),
                     "--json"], cluster_url)
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)["enrich"]
    assert (report["generated"], report["skipped"]) == (0, 5)
    assert _invoke(["ingest", str(tmp_path / "catalog.jsonl"), "--index", enriched, "--enrich"],
                   cluster_url).exit_code == 2  # --enrich without --run is a usage error


def test_api_search_sends_the_expanded_query_and_explains_hits(enriched, cluster, service) -> None:
    api = CogrSearch.from_service(cluster.client, service.url, index=enriched)
    assert (api.expander.run, api.expander.model) == (service.health()["run"], service.health()["model"])
    text = "Norrland Ceramic Table Lamp"
    result = api.search(text, size=5, explain=True)
    keywords = api.expand(text)
    assert result.keywords == keywords
    assert result.representation == representation(keywords, text)
    assert result.body["query"] == keyword_query(representation(keywords, text))
    ids = [hit.id for hit in result.hits]
    assert "hg-3" in ids and result.total >= len(ids)  # the title itself is in both representations
    for hit in result.hits:
        assert hit.matched and set(hit.matched) <= set(result.representation)
    lamp = next(hit for hit in result.hits if hit.id == "hg-3")
    assert normalize(text) in lamp.matched

    # Caller filters, size, from and _source are kept.
    excluded = api.search(text, filters=[{"bool": {"must_not": {"ids": {"values": ["hg-3"]}}}}], explain=True)
    assert "hg-3" not in [hit.id for hit in excluded.hits]
    assert excluded.body["query"]["bool"]["filter"][1] == {"bool": {"must_not": {"ids": {"values": ["hg-3"]}}}}
    paged = api.search(text, size=1, from_=0, source=["title"], explain=True)
    assert [hit.id for hit in paged.hits] == ids[:1]
    assert set(paged.hits[0].source) == {"title"} and paged.hits[0].matched  # explain works without _source

    # Expansions are cached in the client: repeated searches do not call the service.
    requests = service.health()["counters"]["query"]["requests"]
    api.search(text)
    api.expand(text)
    assert service.health()["counters"]["query"]["requests"] == requests

    with pytest.raises(CogrError, match="'no-such-index' not found"):
        api.search(text, index="no-such-index")
    with pytest.raises(CogrError, match="empty"):
        api.search("   ")


def test_search_command_with_service_and_with_run(enriched, cluster, cluster_url, service, run, monkeypatch) -> None:
    monkeypatch.setenv("COGR_TORCH_THREADS", "1")
    text = "Oak Dining Table"
    api = CogrSearch.from_service(cluster.client, service.url, index=enriched)
    expected = [hit.id for hit in api.search(text, size=3).hits]

    via_service = _invoke(["search", text, "--index", enriched, "--service", service.url, "--k", "3", "--explain",
                           "--json"], cluster_url)
    assert via_service.exit_code == 0, via_service.output
    payload = json.loads(via_service.stdout)
    assert [hit["id"] for hit in payload["hits"]] == expected  # same keywords (service cache), same hits
    assert payload["model"] == run.model_tag(0) and all(hit["matched"] for hit in payload["hits"])

    via_run = _invoke(["search", text, "--index", enriched, "--run", str(run.root), "--explain"], cluster_url)
    assert via_run.exit_code == 0, via_run.output
    lines = via_run.stdout.splitlines()
    assert lines[0].startswith("keywords: ") and normalize(text) in lines[0]
    assert any("hg-4" in line for line in lines) and any(line.strip().startswith("matched: ") for line in lines)

    neither = _invoke(["search", text, "--index", enriched], cluster_url)
    assert neither.exit_code == 2 and "--run RUN" in neither.output
    bad_filter = _invoke(["search", text, "--index", enriched, "--service", service.url, "--filter", "{oops"],
                         cluster_url)
    assert bad_filter.exit_code == 2 and "--filter 1: not JSON" in bad_filter.output
