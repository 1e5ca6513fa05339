"""The paired randomization test between two eval results: exact p-values counted by hand,
the scipy computation against a brute-force enumeration of every sign flip, per-query
values in eval output, the report's p columns and refusals, and the demo's lines."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cogr_search.cli.demo_cmd import _print_comparison
from cogr_search.cli.main import cli
from cogr_search.data import choose_split, load_dataset, sample_catalog_path
from cogr_search.demo import against_baseline
from cogr_search.errors import InputError
from cogr_search.evaluation.report import load_reports, markdown
from cogr_search.evaluation.runner import evaluate_sets
from cogr_search.evaluation.significance import format_p, paired_test, randomization_p_value
from cogr_search.metrics import QueryResult


def scores(values: list[float]) -> dict[str, float]:
    return {f"q{i}": v for i, v in enumerate(values)}


def brute_force_p(a: list[float], b: list[float]) -> float:
    """Every one of the 2^n sign flips of the differences, counted: |mean| >= |observed|."""
    d = np.array(b) - np.array(a)
    observed = abs(d.mean())
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    means = np.abs((flips * d).mean(axis=1))
    return float(np.mean(means >= observed - 1e-12))


# --- hand-computed exact p-values ------------------------------------------------------------

def test_three_queries_by_hand() -> None:
    # differences +0.3, +0.2, -0.1 (sum 0.4); the 8 sign flips sum to
    # 0.4, 0.6, 0.0, 0.2, -0.2, 0.0, -0.6, -0.4: four of them lie >= 0.4 from zero -> p = 4/8
    p, exact = randomization_p_value(scores([0.2, 0.4, 0.6]), scores([0.5, 0.6, 0.5]))
    assert exact and p == pytest.approx(0.5)


def test_four_improvements_give_the_smallest_exact_p() -> None:
    # all four differences positive: only "all +" and "all -" reach |sum| = 1.0 -> 2/16
    p, exact = randomization_p_value(scores([0.0, 0.0, 0.0, 0.0]), scores([0.1, 0.2, 0.3, 0.4]))
    assert exact and p == pytest.approx(0.125)


def test_one_large_gain_against_small_losses_by_hand() -> None:
    # differences +0.9, -0.1, -0.1 (sum 0.7); flips: +-0.9 +-0.1 +-0.1 -> sums 1.1, 0.9, 0.9, 0.7 and
    # their negatives; |sum| >= 0.7 for all 8 -> p = 1: one query cannot carry a method
    p, exact = randomization_p_value(scores([0.1, 0.5, 0.5]), scores([1.0, 0.4, 0.4]))
    assert exact and p == pytest.approx(1.0)


def test_no_difference_is_p_one_and_the_test_is_symmetric() -> None:
    same = scores([0.3, 0.7, 0.1, 0.9])
    assert randomization_p_value(same, dict(same))[0] == pytest.approx(1.0)
    a, b = scores([0.2, 0.4, 0.6]), scores([0.5, 0.6, 0.5])
    assert randomization_p_value(a, b)[0] == pytest.approx(randomization_p_value(b, a)[0])


def test_mismatched_queries_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="same, non-empty set of queries"):
        randomization_p_value({"q1": 0.1}, {"q2": 0.2})


# --- scipy against a brute-force enumeration ------------------------------------------------

def test_exact_path_equals_brute_force_enumeration() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(11).round(3).tolist(), rng.random(11).round(3).tolist()
    p, exact = randomization_p_value(scores(a), scores(b))  # 2^11 = 2,048 <= 10,000: exact
    assert exact and p == pytest.approx(brute_force_p(a, b), abs=1e-12)


def test_sampled_path_is_seeded_and_close_to_the_exact_value() -> None:
    rng = np.random.default_rng(3)
    a = rng.random(16).tolist()
    b = (np.array(a) + rng.normal(0.03, 0.2, 16)).tolist()
    exact_p = brute_force_p(a, b)  # 65,536 flips
    p, exact = randomization_p_value(scores(a), scores(b), resamples=10_000, seed=0)
    assert not exact
    assert 0.04 < exact_p < 0.06  # near the usual bar, where sampling error matters
    assert abs(p - exact_p) < 0.02  # 10,000 flips: standard error <= 0.005
    assert randomization_p_value(scores(a), scores(b), seed=0)[0] == p  # the seed fixes it
    assert randomization_p_value(scores(a), scores(b), seed=1)[0] != p


def test_sampled_p_counts_the_observed_flip() -> None:
    # 40 queries all +0.5: no random flip is as extreme; each tail counts the observed flip,
    # (0 + 1) / (999 + 1), and two-sided doubles it: p = 2 / 1000, never 0
    p, exact = randomization_p_value(scores([0.0] * 40), scores([0.5] * 40), resamples=999, seed=0)
    assert not exact and p == pytest.approx(2 / 1000)


def test_format_p() -> None:
    assert [format_p(v) for v in (0.5, 0.04567, 0.00009999)] == ["0.5", "0.0457", "1.0e-04"]


# --- eval output carries per-query values ---------------------------------------------------

def test_eval_result_has_per_query_values_that_average_to_the_table() -> None:
    dataset = load_dataset(sample_catalog_path())
    split = choose_split(dataset, "val", 0.25, 0)
    relevant = split.evaluate.relevant()

    def retrieve(texts, rel):  # half the queries find everything, the other half nothing
        return {q: QueryResult(len(rel[q]), len(rel[q]), sorted(rel[q])) if i % 2 else QueryResult(0, 0, [])
                for i, q in enumerate(sorted(texts)) if q in rel}

    result = evaluate_sets("cogr", retrieve, split, depth=100)
    per_query = result["per_query"]
    assert set(per_query["F1"]) == set(relevant) and len(per_query["F1"]) == result["queries"]
    assert set(per_query["F1"].values()) == {0.0, 1.0}
    for metric in ("P", "R", "F1", "NDCG@10", "R@100"):
        assert sum(per_query[metric].values()) / result["queries"] == pytest.approx(result[metric], abs=1e-6)
    assert "NDCG@1000" not in per_query  # no @k beyond the depth
    json.dumps(result)


# --- the report -----------------------------------------------------------------------------

def result(method: str, f1: list[float], ndcg: list[float] | None = None, ids: list[str] | None = None) -> dict:
    ids = ids or [f"q{i}" for i in range(len(f1))]
    ndcg = ndcg if ndcg is not None else f1
    out = {"method": method, "queries": len(ids), "queries_per_s": 10.0,
           "settings": {"dataset": "homegoods", "split": "val", "cutoff": 5},
           "per_query": {"F1": dict(zip(ids, f1)), "NDCG@10": dict(zip(ids, ndcg))}}
    for metric, values in (("F1", f1), ("NDCG@10", ndcg)):
        out[metric] = sum(values) / len(values)
    for key in ("P", "R", "MRR@10", "P@10", "R@10"):
        out[key] = 0.5
    return out


BM25 = result("bm25", [0.2, 0.4, 0.6], [0.0, 0.0, 0.0])
HYBRID = result("hybrid", [0.5, 0.6, 0.5], [0.1, 0.2, 0.3])


def test_report_table_has_the_hand_computed_p_values() -> None:
    text = markdown([BM25, HYBRID])
    main = [line for line in text.splitlines() if line.startswith("| ")][:3]
    assert main[0].endswith("| F1@100 | p F1 |")
    assert main[1].endswith("| baseline |") and main[1].startswith("| bm25 |")
    assert main[2].startswith("| hybrid |") and main[2].endswith("| 0.5 |")  # the 3-query case above
    cutoffs = [line for line in text.splitlines() if line.startswith("| hybrid |")][1]
    assert cutoffs.endswith("| 0.25 |")  # NDCG@10 +0.1, +0.2, +0.3: 2 of 8 flips reach 0.6 -> p = 0.25
    assert ("p F1, p NDCG@10: each method against the first row (bm25), two-sided paired randomization test "
            "over the 3 queries both score, all 8 sign flips (exact), computed by `scipy.stats.permutation_test`") in text


def test_report_names_the_resamples_and_seed_when_sampling() -> None:
    ids = [f"q{i}" for i in range(20)]
    base = result("bm25", [0.5] * 20, ids=ids)
    other = result("dense", [0.5 + (0.1 if i % 3 else -0.05) for i in range(20)], ids=ids)
    text = markdown([base, other], resamples=2000, seed=5)
    assert "over the 20 queries both score, 2,000 random sign flips, seed 5" in text
    test = paired_test(base, other, "F1", 2000, 5)
    assert f"| {format_p(test.p_value)} |" in text and test.p_value < 0.05 and not test.exact


def test_report_of_older_files_says_na_and_why() -> None:
    old = {k: v for k, v in HYBRID.items() if k != "per_query"}
    text = markdown([BM25, old])
    assert [line for line in text.splitlines() if line.startswith("| hybrid |")][0].endswith("| n/a |")
    assert "n/a: no per-query values in hybrid (homegoods, val)" in text and "rerun `cogr-search eval" in text
    assert "p F1" not in markdown([BM25])  # one file: nothing to test against


def _write(tmp_path: Path, name: str, report: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return path


def test_report_refuses_different_query_sets_naming_both_files(tmp_path: Path) -> None:
    a = _write(tmp_path, "bm25.json", BM25)
    b = _write(tmp_path, "other.json", result("hybrid", [0.5, 0.6], ids=["q0", "q9"]))
    with pytest.raises(InputError) as info:
        load_reports([a, b])
    message = str(info.value)
    assert "\n" not in message
    assert f"{b} and {a} score different queries (2 and 3, 1 shared; e.g. 'q9' only in {b})" in message
    c = _write(tmp_path, "alien.json", result("hybrid", [0.5, 0.6], ids=["x1", "x2"]))
    with pytest.raises(InputError, match=f"{c} and {a} share no query \\(2 and 3 queries scored\\)"):
        load_reports([a, c])


def test_report_command_writes_the_p_value(tmp_path: Path) -> None:
    a, b = _write(tmp_path, "bm25.json", BM25), _write(tmp_path, "hybrid.json", HYBRID)
    md = tmp_path / "report.md"
    run = CliRunner().invoke(cli, ["report", str(a), str(b), "--markdown", str(md)])
    assert run.exit_code == 0, run.output
    assert "| baseline |" in md.read_text() and "all 8 sign flips (exact)" in md.read_text()
    bad = _write(tmp_path, "few.json", result("hybrid", [0.5, 0.6], ids=["q0", "q1"]))
    refused = CliRunner().invoke(cli, ["report", str(a), str(bad), "--markdown", str(md)])
    assert refused.exit_code == 1 and "score different queries" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


# --- the demo's final lines -------------------------------------------------------------------

def test_demo_prints_hybrid_against_bm25(capsys) -> None:
    rows = []
    for method, f1 in (("bm25", [0.2, 0.4, 0.6]), ("cogr-sft", [0.1, 0.1, 0.1]), ("hybrid", [0.5, 0.6, 0.5])):
        row = result(method, f1)
        row.update({"NDCG@10": 0.5, "R@100": 0.5})
        rows.append(row)
    tests = against_baseline(rows[0], rows[1:])
    assert set(tests) == {"cogr-sft", "hybrid"}
    _print_comparison(rows, tests)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].rstrip().endswith("p F1")
    assert lines[3].rstrip().endswith("baseline") and lines[5].rstrip().endswith("0.5")
    assert lines[-1] == ("hybrid vs bm25: F1 0.5333 vs 0.4000 (+0.1333), p = 0.5 (two-sided paired randomization "
                         "test over the 3 queries both score, all 8 sign flips (exact))")
