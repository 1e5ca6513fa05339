"""The cutoff protocol and the method-independent runner (no OpenSearch, no model)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogr_search.data import choose_split, load_dataset, sample_catalog_path
from cogr_search.errors import InputError
from cogr_search.evaluation.cutoff import cutoff_curve, f1_by_cutoff, results_at_cutoff, tune_cutoff
from cogr_search.dense import top_k
from cogr_search.evaluation.runner import evaluate_ranked, evaluate_sets
from cogr_search.metrics import QueryResult, compute_metrics, f1

ITEMS = [f"i{k}" for k in range(30)]

rankings = st.dictionaries(
    st.sampled_from([f"q{k}" for k in range(6)]),
    st.lists(st.sampled_from(ITEMS), max_size=25, unique=True),
    min_size=1,
)
relevance = st.dictionaries(
    st.sampled_from([f"q{k}" for k in range(6)]), st.sets(st.sampled_from(ITEMS), min_size=1, max_size=8), min_size=1
)


@settings(max_examples=60, deadline=None)
@given(ranked=rankings, relevant=relevance, max_k=st.integers(1, 30))
def test_f1_curve_matches_counting_by_hand(ranked, relevant, max_k) -> None:
    curve = f1_by_cutoff(ranked, relevant, max_k)
    for k in range(1, max_k + 1):
        expected = []
        for qid, rel in relevant.items():
            top = ranked.get(qid, [])[:k]
            expected.append(f1(len(set(top) & rel), len(top), len(rel)))
        assert curve[k - 1] == pytest.approx(sum(expected) / len(expected))
    choice = tune_cutoff(ranked, relevant, max_k)
    assert curve[choice.k - 1] == pytest.approx(curve.max())
    assert all(curve[k] < curve.max() - 1e-12 for k in range(choice.k - 1))  # smallest best K


@settings(max_examples=40, deadline=None)
@given(ranked=rankings, relevant=relevance, k=st.integers(1, 30))
def test_results_at_cutoff_feed_the_shared_metrics(ranked, relevant, k) -> None:
    results = results_at_cutoff(ranked, relevant, k)
    metrics = compute_metrics(results, relevant)
    assert metrics["F1"] == pytest.approx(f1_by_cutoff(ranked, relevant, k)[k - 1])
    curve = cutoff_curve(ranked, relevant, grid=(k,))
    assert curve["F1"][0] == pytest.approx(metrics["F1"])
    assert curve["R"][0] == pytest.approx(metrics["R"])


def test_tune_cutoff_picks_the_obvious_k() -> None:
    ranked = {"a": ["x", "y", "n1", "n2"], "b": ["z", "w", "n3", "n4"]}
    relevant = {"a": {"x", "y"}, "b": {"z", "w"}}
    choice = tune_cutoff(ranked, relevant, max_k=4)
    assert (choice.k, choice.f1, choice.queries) == (2, 1.0, 2)


def test_top_k_is_exact_and_ties_break_by_index() -> None:
    rng = np.random.default_rng(0)
    items = rng.normal(size=(50, 8)).astype(np.float32)
    queries = rng.normal(size=(7, 8)).astype(np.float32)
    got = top_k(queries, items, 10, block=3)
    expected = np.argsort(-(queries @ items.T), axis=1, kind="stable")[:, :10]
    assert (got == expected).all()
    tied = top_k(np.ones((1, 2), np.float32), np.ones((5, 2), np.float32), 5)
    assert tied.tolist() == [[0, 1, 2, 3, 4]]
    assert top_k(queries, items, 500).shape == (7, 50)


def _oracle_ranker(dataset, noise: int, seed: int = 1):
    """Relevant items first, then `noise` random items: a retriever we can reason about."""
    relevant = dataset.relevant()
    rng = random.Random(seed)
    seen_batches: list[set[str]] = []

    def rank(texts):
        seen_batches.append(set(texts))
        out = {}
        for qid in texts:
            rel = sorted(relevant.get(qid, ()))
            others = rng.sample(sorted(set(dataset.items) - set(rel)), noise)
            out[qid] = rel + others
        return out

    return rank, seen_batches


def test_evaluate_ranked_tunes_on_train_and_scores_val() -> None:
    dataset = load_dataset(sample_catalog_path())
    split = choose_split(dataset, "val", 0.25, 3)
    rank, batches = _oracle_ranker(dataset, noise=20)
    result = evaluate_ranked("oracle", rank, split, depth=50)
    assert batches == [set(dataset.queries)]  # train and val ranked once, together
    assert result["queries"] == len(split.evaluate.relevant())
    assert result["method"] == "oracle" and result["queries_per_s"] > 0
    s = result["settings"]
    assert s["split"] == "val" and "train split" in s["cutoff_source"]
    assert s["cutoff_tune_queries"] == len(split.tune.relevant())
    assert result["NDCG@10"] == 1.0 and result["MRR@10"] == 1.0
    assert "R@100" not in result and "NDCG@1000" not in result  # no @k beyond the depth of 50
    assert max(result["curve"]["k"]) <= 50
    fixed = evaluate_ranked("oracle", rank, split, cutoff=3, depth=50)
    assert fixed["settings"]["cutoff"] == 3 and fixed["settings"]["cutoff_source"] == "--cutoff"
    assert batches[-1] == set(split.evaluate.queries)  # nothing to tune: only val ranked
    with pytest.raises(InputError, match="--cutoff 60"):
        evaluate_ranked("oracle", rank, split, cutoff=60, depth=50)


def test_tune_on_another_set_must_share_the_catalog(tmp_path) -> None:
    dataset = load_dataset(sample_catalog_path())
    split = choose_split(dataset, "all")
    rank, _ = _oracle_ranker(dataset, noise=5)
    with pytest.raises(InputError, match="--split all: every query is scored, so none is left to tune the oracle cutoff on"):
        evaluate_ranked("oracle", rank, split, depth=20)
    other = dataset.subset(list(dataset.queries)[:5])
    result = evaluate_ranked("oracle", rank, split, tune_on=other, depth=20)
    assert result["settings"]["cutoff_tune_queries"] == 5
    assert "--tune-on" in result["settings"]["cutoff_source"]
    from cogr_search.data import Dataset, Item

    alien = Dataset({"zz": Item("zz", "x")}, other.queries, {q: {"zz": 2.0} for q in other.queries}, 1.0, "a", tmp_path)
    with pytest.raises(InputError, match="not in .*same catalog"):
        evaluate_ranked("oracle", rank, split, tune_on=alien, depth=20)


def test_evaluate_sets_uses_exact_counts() -> None:
    dataset = load_dataset(sample_catalog_path())
    split = choose_split(dataset, "all")
    relevant = dataset.relevant()

    def retrieve(texts, rel):
        assert rel == relevant
        return {q: QueryResult(2 * len(rel[q]), len(rel[q]), sorted(rel[q])) for q in texts}

    result = evaluate_sets("cogr", retrieve, split)
    assert result["P"] == pytest.approx(0.5) and result["R"] == 1.0
    assert result["F1"] == pytest.approx(2 / 3)
    assert "cutoff" not in result["settings"]
