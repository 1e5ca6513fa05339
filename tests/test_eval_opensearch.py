"""Evaluation against a real node: exact counts, ranked lists, and the eval command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import Item, load_dataset, sample_catalog_path
from cogr_search.keywords import keyword_set
from cogr_search.cluster.bulk import bulk_write
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.eval import bm25_clause, full_set_counts, ranked_ids
from cogr_search.cluster.ingest import ingest_items
from cogr_search.settings import load_settings

pytestmark = [pytest.mark.opensearch, pytest.mark.secured]  # secured: also run on secured nodes


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
    assert not bulk_write(cluster, actions).failures
    cluster.call(cluster.client.indices.refresh, index=index_name)
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


def test_eval_bm25_command(cluster_url: str, index_name: str, loaded, tmp_path) -> None:
    out = tmp_path / "bm25.json"
    args = ["eval", "--data", str(sample_catalog_path()), "--index", index_name, "--method", "bm25", "--split", "val",
            "--val-fraction", "0.25", "--opensearch-url", cluster_url, "--json", "--out", str(out)]
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


def test_eval_errors_are_one_line(cluster_url: str, index_name: str, tmp_path) -> None:
    data = str(sample_catalog_path())
    runner = CliRunner()
    missing = runner.invoke(cli, ["eval", "--data", data, "--method", "bm25", "--opensearch-url", cluster_url])
    assert missing.exit_code == 1 and "--method bm25 needs --index NAME" in missing.output
    empty = runner.invoke(cli, ["eval", "--data", data, "--index", index_name, "--method", "bm25", "--opensearch-url", cluster_url])
    assert empty.exit_code == 1 and "does not exist" in empty.output
    ingest_items(Cluster(load_settings(opensearch_url=cluster_url)), index_name, [Item("a", "oak table")], progress=False)
    cogr = ["eval", "--data", data, "--index", index_name, "--method", "cogr", "--opensearch-url", cluster_url]
    run = runner.invoke(cli, [*cogr, "--run", "no-such-run", "--runs-dir", str(tmp_path)])
    assert run.exit_code == 1 and "run 'no-such-run' not found" in run.output
    neither = runner.invoke(cli, cogr)
    assert neither.exit_code == 1 and "needs --query-keywords FILE or --run RUN" in neither.output
    wrong = runner.invoke(cli, ["eval", "--data", data, "--method", "dense", "--backend", "shadow"])
    assert wrong.exit_code == 1 and "apply to --method cogr only" in wrong.output
    mixed = runner.invoke(cli, [*cogr, "--run", "x", "--seed", "3"])
    assert mixed.exit_code == 1 and "do not apply with --run" in mixed.output


def test_eval_defaults_to_the_validation_split_and_never_tunes_on_scored_queries(
    cluster_url: str, index_name: str, loaded, tmp_path
) -> None:
    base = ["eval", "--data", str(sample_catalog_path()), "--index", index_name, "--method", "bm25",
            "--opensearch-url", cluster_url, "--json"]
    runner = CliRunner()
    default = runner.invoke(cli, base)
    assert default.exit_code == 0, default.output
    payload = json.loads(default.stdout)
    val_ids = loaded.split(0.1, 0)[1].queries
    assert payload["settings"]["split"] == "val" and payload["settings"]["queries_in_split"] == len(val_ids)
    assert payload["settings"]["cutoff_source"].startswith("best F1 on train split")
    whole = runner.invoke(cli, [*base, "--split", "all"])
    assert whole.exit_code == 1 and "none is left to tune the bm25 cutoff on" in whole.output
    fixed = runner.invoke(cli, [*base, "--split", "all", "--cutoff", "5"])
    assert fixed.exit_code == 0 and json.loads(fixed.stdout)["queries"] == len(loaded.relevant())
    deep = runner.invoke(cli, [*base, "--depth", "50"])
    keys = json.loads(deep.stdout).keys()
    assert "NDCG@10" in keys and not {"NDCG@100", "R@1000", "P@100"} & keys  # no @k beyond --depth


def test_eval_with_a_run_scores_the_runs_own_split(cluster_url: str, index_name: str, loaded, tmp_path) -> None:
    from cogr_search.runs.run_dir import RunDir, atomic_write_json

    ids = sorted(loaded.queries)
    run = RunDir.create("split-run", tmp_path)
    held_out, trained = ids[::4], [q for q in ids if q not in ids[::4]]  # not what a seeded split would give
    atomic_write_json(run.split_path, {"train_queries": trained, "val_queries": held_out, "items": sorted(loaded.items)})
    run.write_config({"data": str(sample_catalog_path()), "model": "none"})
    args = ["eval", "--data", str(sample_catalog_path()), "--index", index_name, "--method", "bm25", "--run", "split-run",
            "--runs-dir", str(tmp_path), "--opensearch-url", cluster_url, "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)["settings"]
    assert s["queries_in_split"] == len(held_out) and s["split_source"] == str(run.split_path)
    assert s["cutoff_tune_queries"] == len([q for q in trained if q in loaded.relevant()])
    assert "val_fraction" not in s
    # --split all with --run scores every query of DATA: refused when DATA holds the run's training queries
    bad = CliRunner().invoke(cli, [*args, "--split", "all"])
    assert bad.exit_code == 1 and "are training queries of run 'split-run'" in bad.output
