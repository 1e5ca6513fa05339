"""Hand-computed checks of every metric, including the edge cases."""

from __future__ import annotations

import math

import pytest

from cogr_search.metrics import (
    QueryResult,
    binarize,
    compute_metrics,
    f1,
    f_beta,
    metric_names,
    query_metrics,
)


def test_f1_from_counts() -> None:
    # P = 2/4, R = 2/3 -> F1 = 2*0.5*0.667/(1.167) = 4/7
    assert f1(2, 4, 3) == pytest.approx(4 / 7)
    assert f1(0, 5, 3) == 0.0
    assert f1(0, 0, 3) == 0.0  # nothing retrieved
    assert f1(0, 0, 0) == 0.0  # undefined -> 0
    assert f1(3, 3, 3) == 1.0


def test_f_beta_weighs_recall() -> None:
    # P = 1/2, R = 1/4: F2 = 5 * P * R / (4P + R) = 5/8 / 2.25 = 5/18
    assert f_beta(1, 2, 4, beta=2.0) == pytest.approx(5 / 18)
    assert f_beta(1, 2, 4, beta=0.5) == pytest.approx(1.25 * 0.125 / (0.25 * 0.5 + 0.25))
    assert f_beta(2, 4, 3, beta=1.0) == f1(2, 4, 3)


def test_binarize_threshold_and_omits_empty_queries() -> None:
    labels = {"q1": {"a": 3.0, "b": 2.0, "c": 1.67}, "q2": {"a": 1.0}}
    assert binarize(labels, 2.0) == {"q1": {"a", "b"}}


def test_query_metrics_by_hand() -> None:
    # ranked: a(rel) x b(rel) y ... ; rel = {a, b, c}; 5 retrieved, 2 tp
    result = QueryResult(n_retrieved=5, n_true_positive=2, ranked=["a", "x", "b", "y", "z"])
    m = query_metrics(result, {"a", "b", "c"}, ks=(2, 10))
    assert m["P"] == pytest.approx(2 / 5)
    assert m["R"] == pytest.approx(2 / 3)
    assert m["F1"] == pytest.approx(2 * 2 / (5 + 3))
    assert m["P@2"] == pytest.approx(1 / 2)
    assert m["R@2"] == pytest.approx(1 / 3)
    assert m["F1@2"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert m["MRR@2"] == 1.0
    assert m["NDCG@2"] == pytest.approx(1.0 / (1.0 + 1 / math.log2(3)))
    assert m["P@10"] == pytest.approx(2 / 10)
    assert m["R@10"] == pytest.approx(2 / 3)
    dcg = 1.0 + 1 / math.log2(4)
    idcg = 1.0 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["NDCG@10"] == pytest.approx(dcg / idcg)


def test_mrr_is_zero_when_first_hit_is_beyond_k() -> None:
    result = QueryResult(3, 1, ["x", "y", "a"])
    m = query_metrics(result, {"a"}, ks=(2, 3))
    assert m["MRR@2"] == 0.0 and m["NDCG@2"] == 0.0 and m["P@2"] == 0.0
    assert m["MRR@3"] == pytest.approx(1 / 3)
    assert m["NDCG@3"] == pytest.approx(1 / math.log2(4))


def test_all_retrieved_and_nothing_retrieved() -> None:
    everything = QueryResult(4, 2, ["a", "x", "b", "y"])
    m = query_metrics(everything, {"a", "b"}, ks=(10,))
    assert m["R"] == 1.0 and m["P"] == 0.5 and m["R@10"] == 1.0
    nothing = query_metrics(QueryResult(0, 0, []), {"a"}, ks=(10,))
    assert all(value == 0.0 for value in nothing.values())


def test_ranked_may_be_shorter_than_the_retrieved_set() -> None:
    # Backends return only the top of the ranking; set metrics still use the counts.
    m = query_metrics(QueryResult(5000, 40, ["a"]), {"a", "b"} | {f"r{i}" for i in range(48)}, ks=(10,))
    assert m["P"] == pytest.approx(40 / 5000)
    assert m["R"] == pytest.approx(40 / 50)
    assert m["P@10"] == pytest.approx(0.1)


def test_inconsistent_counts_are_rejected() -> None:
    with pytest.raises(ValueError):
        query_metrics(QueryResult(1, 2, []), {"a", "b"})
    with pytest.raises(ValueError):
        query_metrics(QueryResult(1, 0, []), set())


def test_compute_metrics_macro_average_and_skips() -> None:
    results = {
        "q1": QueryResult(2, 1, ["a", "x"]),  # P .5 R 1 F1 2/3
        "q2": QueryResult(1, 0, ["y"]),  # all 0
        "q4": QueryResult(9, 9, ["z"]),  # not in relevant: ignored
    }
    relevant = {"q1": {"a"}, "q2": {"b"}, "q3": {"c", "d"}, "q5": set()}
    m = compute_metrics(results, relevant, ks=(1,))
    assert m["queries"] == 3  # q5 has no relevant item, q3 is missing -> retrieved nothing
    assert m["P"] == pytest.approx(0.5 / 3)
    assert m["R"] == pytest.approx(1 / 3)
    assert m["F1"] == pytest.approx((2 / 3) / 3)
    assert m["MRR@1"] == pytest.approx(1 / 3)
    assert m["P@1"] == pytest.approx(1 / 3)
    assert set(m) == set(metric_names((1,))) | {"queries"}


def test_compute_metrics_default_keys_and_empty_input() -> None:
    m = compute_metrics({}, {})
    assert m["queries"] == 0
    for k in (10, 100, 1000):
        for name in ("MRR", "NDCG", "P", "R", "F1"):
            assert m[f"{name}@{k}"] == 0.0
