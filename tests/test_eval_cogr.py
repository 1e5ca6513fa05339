"""CoGR evaluation: the shadow backend and OpenSearch agree on the same keywords."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import choose_split, load_dataset, sample_catalog_path
from cogr_search.evaluation.cogr import evaluate_cogr
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.keywords import keyword_set
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import SyncConfig, sync_keywords

pytestmark = [pytest.mark.opensearch, pytest.mark.secured]  # secured: also run on secured nodes

STOP = {"a", "an", "and", "the", "in", "with", "of", "for", "|", "-", "&"}


def words(text: str) -> list[str]:
    return keyword_set(w for w in text.replace(",", " ").split() if w.lower() not in STOP)


def bigrams(text: str) -> list[str]:
    tokens = words(text)
    return [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]


@pytest.fixture()
def synced(cluster: Cluster, index_name: str, tmp_path: Path):
    """The sample catalog with rule-made item keywords synced, and a query keyword file."""
    dataset = load_dataset(sample_catalog_path())
    ingest_items(cluster, index_name, dataset.items.values(), progress=False)
    item_keywords = {iid: words(item.title) + bigrams(item.title) for iid, item in list(dataset.items.items())[:-20]}
    sync_keywords(cluster, index_name, item_keywords, round_=1, model="test-rules", config=SyncConfig(missing="title-only"), progress=False)
    query_file = tmp_path / "query_keywords.jsonl"
    rows = [(qid, words(q.text) + bigrams(q.text)) for qid, q in list(dataset.queries.items())[:-3]]
    write_keyword_file(query_file, rows)
    return dataset, query_file


def test_shadow_and_opensearch_give_identical_set_metrics(cluster: Cluster, index_name: str, synced) -> None:
    dataset, query_file = synced
    split = choose_split(dataset, "all")
    on_cluster = evaluate_cogr(cluster, index_name, split, query_file, backend="opensearch", batch_size=9)
    shadow = evaluate_cogr(cluster, index_name, split, query_file, backend="shadow")
    assert on_cluster["queries"] == shadow["queries"] == len(dataset.queries)
    for key in ("P", "R", "F1"):
        assert on_cluster[key] == shadow[key], key
    assert 0 < on_cluster["F1"] < 1
    assert on_cluster["settings"]["queries_without_keywords"] == 3
    assert shadow["settings"]["shadow_items"] == len(dataset.items)
    for key in ("MRR@10", "NDCG@10", "P@10", "NDCG@100", "R@1000"):  # same BM25 order too
        assert on_cluster[key] == pytest.approx(shadow[key], abs=1e-12), key


def test_eval_cogr_command_both_backends(cluster_url: str, index_name: str, synced) -> None:
    _, query_file = synced
    base = ["eval", "--data", str(sample_catalog_path()), "--index", index_name, "--method", "cogr",
            "--query-keywords", str(query_file), "--opensearch-url", cluster_url, "--json"]
    runner = CliRunner()
    results = {}
    for backend in ("opensearch", "shadow"):
        result = runner.invoke(cli, [*base, "--backend", backend])
        assert result.exit_code == 0, result.output
        results[backend] = json.loads(result.stdout)
    assert results["opensearch"]["F1"] == results["shadow"]["F1"]
    assert results["shadow"]["settings"]["backend"] == "shadow"
