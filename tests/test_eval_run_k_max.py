"""`eval --method cogr --query-keywords FILE --run RUN` scores at the run's k_max.

The run here was trained with k_max 2 and its query keyword file holds up to eight
keywords per query. At the run's k_max each query matches with its first two keywords
(and its text); at the default 30 with all of them, which retrieves more and so scores a
higher recall. Before the fix the command passed only the run's name on and scored at 30.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import SyncConfig, sync_keywords
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.evaluation.cogr import evaluate_cogr
from cogr_search.evaluation.methods import split_of_run
from cogr_search.keywords import DEFAULT_K_MAX, keyword_set
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.runs.run_dir import RunDir, atomic_write_json

pytestmark = [pytest.mark.opensearch]

RUN_K_MAX = 2
STOP = {"a", "an", "and", "the", "in", "with", "of", "for", "|", "-", "&"}


def _keywords(text: str) -> list[str]:
    """Words, then bigrams, of a text: eight at most, so cutting at 2 or 30 differs."""
    words = keyword_set(w for w in text.replace(",", " ").split() if w.lower() not in STOP)
    return (words + [f"{a} {b}" for a, b in zip(words, words[1:])])[:8]


def _make_run(runs_dir: Path, name: str, dataset, complete: bool) -> RunDir:  # noqa: ANN001
    """A run trained with k_max 2 holding out every fourth query; round 0 complete or not."""
    run = RunDir.create(name, runs_dir)
    run.write_config({"data": str(sample_catalog_path()), "model": "none", "k_max": RUN_K_MAX})
    ids = sorted(dataset.queries)
    atomic_write_json(run.split_path, {"train_queries": [q for q in ids if q not in ids[::4]],
                                       "val_queries": ids[::4], "items": sorted(dataset.items)})
    if complete:
        digest = "ab" * 32
        run.mark_done("round-0", weights_sha256={"query": digest, "item": digest}, phase="base")
    return run


@pytest.fixture()
def synced(opensearch_cluster: Cluster, index_name: str, tmp_path: Path):
    """The sample catalog with rule-made item keywords synced, and a query keyword file."""
    dataset = load_dataset(sample_catalog_path())
    ingest_items(opensearch_cluster, index_name, dataset.items.values(), progress=False)
    items = {iid: _keywords(item.title) for iid, item in dataset.items.items()}
    sync_keywords(opensearch_cluster, index_name, items, round_=1, model="test-rules",
                  config=SyncConfig(missing="title-only"), progress=False)
    query_file = tmp_path / "query_keywords.jsonl"
    write_keyword_file(query_file, [(qid, _keywords(q.text)) for qid, q in dataset.queries.items()])
    return dataset, query_file


def _eval(opensearch_url: str, index_name: str, query_file: Path, runs_dir: Path, *extra: str):
    args = ["eval", "--data", str(sample_catalog_path()), "--index", index_name, "--method", "cogr",
            "--query-keywords", str(query_file), "--runs-dir", str(runs_dir), "--opensearch-url", opensearch_url,
            "--json", *extra]
    return CliRunner().invoke(cli, args)


def test_a_keyword_file_is_scored_at_the_runs_k_max(
        opensearch_cluster: Cluster, opensearch_url: str, index_name: str, synced, tmp_path: Path) -> None:
    dataset, query_file = synced
    runs_dir = tmp_path / "runs"
    run = _make_run(runs_dir, "k2", dataset, complete=True)
    assert run.serving_spec().k_max == RUN_K_MAX

    outcome = _eval(opensearch_url, index_name, query_file, runs_dir, "--run", "k2")
    assert outcome.exit_code == 0, outcome.output
    result = json.loads(outcome.stdout)
    settings = result["settings"]
    assert (settings["k_max"], settings["run"], settings["round"]) == (RUN_K_MAX, "k2", 0)

    split = split_of_run(dataset, "k2", runs_dir)
    at_run = evaluate_cogr(opensearch_cluster, index_name, split, query_file, k_max=RUN_K_MAX)
    at_default = evaluate_cogr(opensearch_cluster, index_name, split, query_file, k_max=DEFAULT_K_MAX)
    assert (result["P"], result["R"], result["F1"]) == (at_run["P"], at_run["R"], at_run["F1"])
    # the check has teeth: scored at the default k_max the same file and split retrieve more
    assert result["R"] < at_default["R"]


def test_a_run_without_a_complete_round_lends_its_configured_k_max(
        opensearch_url: str, index_name: str, synced, tmp_path: Path) -> None:
    dataset, query_file = synced
    runs_dir = tmp_path / "runs"
    _make_run(runs_dir, "fresh", dataset, complete=False)
    outcome = _eval(opensearch_url, index_name, query_file, runs_dir, "--run", "fresh")
    assert outcome.exit_code == 0, outcome.output
    settings = json.loads(outcome.stdout)["settings"]
    assert settings["k_max"] == RUN_K_MAX and settings["run"] == "fresh" and "round" not in settings

    refused = _eval(opensearch_url, index_name, query_file, runs_dir, "--run", "fresh", "--round", "3")
    assert refused.exit_code == 1
    assert "run 'fresh': round 3 is not complete (complete: none)" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    orphan = _eval(opensearch_url, index_name, query_file, runs_dir, "--round", "0")
    assert orphan.exit_code == 1 and "--round needs --run RUN" in orphan.output
