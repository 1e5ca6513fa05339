"""Phase 2's bookkeeping without a model: keyword-space profiles by hand, set metrics from
a shadow view's cached counts, metrics.json rebuilt from the manifest, and the run report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.shadow import ItemIndex, QueryView
from cogr_search.training.keyword_space import keyword_space, side_profile
from cogr_search.training.phase2 import set_metrics, write_metrics
from cogr_search.runs.run_dir import RunDir


def test_side_profile_counts_words_per_keyword() -> None:
    profile = side_profile([["rug", "area rug", "8x10 wool area rug"], ["rug"], []])
    assert profile["sets"] == 3 and profile["keywords"] == 4 and profile["vocabulary"] == 3
    assert (profile["share_unigram"], profile["share_bigram"], profile["share_3+"]) == (0.5, 0.25, 0.25)
    assert profile["mean_set_size"] == pytest.approx(4 / 3, abs=1e-3)


def test_keyword_space_overlap() -> None:
    space = keyword_space({"q1": ["rug", "area rug"], "q2": ["lamp"]}, {"i1": ["area rug"], "i2": ["sofa"]})
    assert space["shared_vocabulary"] == 1
    assert space["query_vocabulary_in_items"] == pytest.approx(1 / 3, abs=1e-4)


def test_set_metrics_from_cached_counts() -> None:
    # q1 retrieves i1 (relevant): P 1 R 1; q2 retrieves i2, i3 with rel {i3, i4}: P 1/2 R 1/2; q3 has no label
    items = ItemIndex.build({"i1": ["lamp"], "i2": ["office"], "i3": ["office"], "i4": []},
                            {"i1": "Lamp", "i2": "Desk", "i3": "Chair", "i4": "Sofa"})
    view = QueryView.build({"q1": ["lamp"], "q2": ["office"], "q3": []}, {"q1": "lamp", "q2": "x", "q3": "y"},
                           items, {"q1": {"i1"}, "q2": {"i3", "i4"}})
    assert set_metrics(view) == {"P": 0.75, "R": 0.75, "F1": 0.75, "queries": 2}


def _phase(name: str, round_: int, f1: float, samples: list[float] | None = None) -> dict:
    side = {"sets": 2, "keywords": 4, "mean_set_size": 2.0, "vocabulary": 3,
            "share_unigram": 0.5, "share_bigram": 0.25, "share_3+": 0.25}
    entry = {"phase": name, "round": round_, "val": {"P": 0.5, "R": 0.5, "F1": f1, "queries": 10},
             "train": {"P": 0.6, "R": 0.6, "F1": f1 + 0.1, "queries": 30}, "mean_reward": None,
             "zero_std_share": None, "keyword_space": {"query": side, "item": side, "shared_vocabulary": 2,
                                                       "query_vocabulary_in_items": 0.66}}
    if samples:
        entry.update(val_F1_samples=samples, val_F1_mean=sum(samples) / len(samples))
    return entry


def test_metrics_json_follows_the_manifest_and_report_draws_it(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "r")
    run.mark_done("round-1/item_keywords", phase_metrics=_phase("rl-item-1", 1, 0.3, [0.3, 0.32]))
    run.mark_done("round-0/metrics", phase_metrics=_phase("sft", 0, 0.2, [0.2, 0.22]))
    run.mark_done("round-1/query_keywords", phase_metrics=_phase("rl-query-1", 1, 0.25, [0.25, 0.27]))
    phases = write_metrics(run)
    assert [p["phase"] for p in phases] == ["sft", "rl-query-1", "rl-item-1"]
    assert json.loads(run.metrics_path.read_text())["phases"] == phases
    result = CliRunner().invoke(cli, ["report", "--run", str(run.root)])
    assert result.exit_code == 0, result.output
    text = (run.root / "phases.md").read_text()
    assert "| rl-item-1 | 0.5000 | 0.5000 | 0.3000 | 0.3100 (0.3000-0.3200, n=2) |" in text
    assert (run.root / "phases.png").stat().st_size > 10_000


def test_report_without_metrics_is_one_line(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "empty")
    result = CliRunner().invoke(cli, ["report", "--run", str(run.root)])
    assert result.exit_code == 1 and "metrics.json: not found" in result.output
