"""Same keywords, same metrics, whichever engine serves them (issue 10, "Done when").

The sample catalog with rule-made item keywords is loaded and synced into each engine's
node and into the OpenSearch reference; `eval --method bm25` and `eval --method cogr`
(the same query keyword file) must report the same P/R/F1 and ranked metrics on every
engine as on OpenSearch 2.19: BM25 variants differ by a constant factor, and the shared tie
order (`_score desc, id asc`) fixes the rest. Runs on OpenSearch 2.19 (two indices of one
node, loaded independently), OpenSearch 3.x (Lucene's BM25Similarity) and Elasticsearch 8.17.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import SyncConfig, sync_keywords
from tests.conftest import all_engines, connect_to, drop_indices
from tests.test_eval_cogr import bigrams, words

pytestmark = pytest.mark.opensearch

TIMING = {"queries_per_s", "seconds", "settings"}


def _load(cluster: Cluster, alias: str) -> None:
    dataset = load_dataset(sample_catalog_path())
    ingest_items(cluster, alias, dataset.items.values(), progress=False)
    item_keywords = {iid: words(item.title) + bigrams(item.title) for iid, item in list(dataset.items.items())[:-20]}
    sync_keywords(cluster, alias, item_keywords, round_=1, model="test-rules", config=SyncConfig(missing="title-only"),
                  progress=False)


def _eval(url: str, alias: str, *args: str) -> dict:
    result = CliRunner().invoke(cli, ["eval", "--data", str(sample_catalog_path()), "--index", alias, *args,
                                      "--cluster-url", url, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _metrics(payload: dict) -> dict:
    return {k: v for k, v in payload.items() if k not in TIMING}


@all_engines
def test_eval_metrics_are_the_same_on_every_engine(
    cluster: Cluster, cluster_url: str, opensearch_node_url: str, index_name: str, tmp_path: Path
) -> None:
    # The reference is the session's OpenSearch 2.19 (its unparametrized fixture: the test id
    # then names only the engine under test).
    opensearch_url, opensearch_cluster = opensearch_node_url, connect_to(opensearch_node_url)
    reference = f"{index_name}-ref"
    try:
        _load(cluster, index_name)
        _load(opensearch_cluster, reference)
        dataset = load_dataset(sample_catalog_path())
        query_file = tmp_path / "query_keywords.jsonl"
        write_keyword_file(query_file, [(qid, words(q.text) + bigrams(q.text)) for qid, q in dataset.queries.items()])
        for method in (["--method", "bm25"], ["--method", "cogr", "--query-keywords", str(query_file)]):
            here, there = _eval(cluster_url, index_name, *method), _eval(opensearch_url, reference, *method)
            assert _metrics(here) == _metrics(there), method
            assert 0 < here["F1"] < 1 and here["queries"] > 0
            assert here["settings"]["index"] == index_name
    finally:
        drop_indices(opensearch_cluster, f"{reference}--r*")
