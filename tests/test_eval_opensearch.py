"""Evaluation against a real node: exact counts, ranked lists, and the eval command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from opensearchpy import helpers

from cogr_search.cli.main import cli
from cogr_search.data import Item, load_dataset, sample_catalog_path
from cogr_search.keywords import keyword_set
from cogr_search.opensearch.client import Cluster
from cogr_search.opensearch.eval import bm25_clause, full_set_counts, ranked_ids
from cogr_search.opensearch.ingest import ingest_items
from cogr_search.settings import load_settings

pytestmark = pytest.mark.opensearch


@pytest.fixture()
def loaded(cluster: Cluster, index_name: str):
    dataset = load_dataset(sample_catalog_path())
    ingest_items(cluster, index_name, dataset.items.values(), progress=False)
    return dataset


def _words(text: str) -> list[str]:
    return keyword_set(text.replace(",", " ").replace("|", " ").split())


def test_full_set_counts_match_counting_in_python(cluster: Cluster, index_name: str, loaded) -> None:
    item_keywords = {iid: _words(item.title) for iid, item in loaded.items.items()}
    actions = ({"_op_type": "update", "_index": index_name, "_id": iid, "doc": {"cogr_keywords": kws}} for iid, kws in item_keywords.items())
    helpers.bulk(cluster.client, actions, refresh=True)
    relevant = loaded.relevant()
    query_keywords = {qid: _words(q.text) for qid, q in loaded.queries.items()}
    clauses = {qid: {"bool": {"filter": [{"terms": {"cogr_keywords": kws}}]}} for qid, kws in query_keywords.items()}
    counts = full_set_counts(cluster, index_name, clauses, relevant, batch_size=7)
    for qid, kws in query_keywords.items():
        retrieved = {iid for iid, ikws in item_keywords.items() if set(kws) & set(ikws)}
        assert counts[qid] == (len(retrieved), len(retrieved & relevant[qid])), qid
    assert max(n for n, _ in counts.values()) > 50 and min(n for n, _ in counts.values()) < 20


def test_bm25_ranked_lists_are_ordered_searches(cluster: Cluster, index_name: str, loaded) -> None:
    texts = {qid: q.text for qid, q in list(loaded.queries.items())[:5]}
    ranked = ranked_ids(cluster, index_name, {q: bm25_clause(t) for q, t in texts.items()}, depth=20, batch_size=2)
    for qid, text in texts.items():
        hits = cluster.client.search(index=index_name, body={"query": bm25_clause(text), "size": 20})["hits"]["hits"]
        assert ranked[qid] == [h["_id"] for h in hits]
        assert 0 < len(ranked[qid]) <= 20


def test_eval_bm25_command(opensearch_url: str, index_name: str, loaded, tmp_path) -> None:
    out = tmp_path / "bm25.json"
    args = ["eval", "--data", str(sample_catalog_path()), "--index", index_name, "--method", "bm25", "--split", "val",
            "--val-fraction", "0.25", "--opensearch-url", opensearch_url, "--json", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload == json.loads(out.read_text())
    expected = {"P", "R", "F1", "MRR@100", "NDCG@100", "P@10", "R@1000", "F1@1000", "queries", "method", "queries_per_s"}
    assert expected <= payload.keys()
    held_out = loaded.split(0.25, 0)[1]
    assert payload["method"] == "bm25" and payload["queries"] == len(held_out.queries) > 0
    assert 0 < payload["F1"] <= 1 and payload["settings"]["cutoff"] >= 1
    assert payload["settings"]["index"] == index_name
    table = CliRunner().invoke(cli, [*args[:-3]])
    assert table.exit_code == 0 and "full set" in table.stdout and "cutoff" in table.stdout


def test_eval_errors_are_one_line(opensearch_url: str, index_name: str, tmp_path) -> None:
    data = str(sample_catalog_path())
    runner = CliRunner()
    missing = runner.invoke(cli, ["eval", "--data", data, "--method", "bm25", "--opensearch-url", opensearch_url])
    assert missing.exit_code == 1 and "--method bm25 needs --index NAME" in missing.output
    empty = runner.invoke(cli, ["eval", "--data", data, "--index", index_name, "--method", "bm25", "--opensearch-url", opensearch_url])
    assert empty.exit_code == 1 and "does not exist" in empty.output
    ingest_items(Cluster(load_settings(opensearch_url=opensearch_url)), index_name, [Item("a", "oak table")], progress=False)
    cogr = ["eval", "--data", data, "--index", index_name, "--method", "cogr", "--opensearch-url", opensearch_url]
    run = runner.invoke(cli, [*cogr, "--run", "no-such-run", "--runs-dir", str(tmp_path)])
    assert run.exit_code == 1 and "run 'no-such-run' not found" in run.output
    neither = runner.invoke(cli, cogr)
    assert neither.exit_code == 1 and "exactly one of --query-keywords FILE or --run RUN" in neither.output
    wrong = runner.invoke(cli, ["eval", "--data", data, "--method", "dense", "--run", "x"])
    assert wrong.exit_code == 1 and "apply to --method cogr only" in wrong.output
