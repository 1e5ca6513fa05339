"""Retrieval metrics of the CoGR paper (Table 2 and Table 7), for shadow and OpenSearch.

Set metrics (P, R, F1) look at the FULL retrieved set, which is what CoGR optimizes: a
keyword match either retrieves an item or not. Ranked metrics (@k) look at the BM25
order inside that set. Both backends report a `QueryResult` per query, so the numbers
are computed by the same code whichever backend produced them.

Conventions (written down because papers differ):
- Macro averages: each metric is computed per query, then averaged over queries.
- Queries with no relevant item are skipped; a query in `relevant` but missing from
  `results` counts as having retrieved nothing.
- P@k divides by k (trec_eval's convention), even when fewer than k items were
  retrieved; R@k divides by |rel|; F1@k is the harmonic mean of P@k and R@k.
- MRR@k is 1/rank of the first relevant item within the top k, else 0.
- NDCG@k uses binary gains and a log2(rank + 1) discount; the ideal ranking puts
  min(k, |rel|) relevant items first.
- F-beta from counts is (1 + b^2) tp / (b^2 |rel| + |ret|), 0 when undefined; F1 is
  beta = 1. b > 1 weighs recall higher.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_KS = (10, 100, 1000)


@dataclass
class QueryResult:
    """What a backend retrieved for one query: full-set counts plus the top of the ranking."""

    n_retrieved: int
    n_true_positive: int
    ranked: list[str] = field(default_factory=list)


def f_beta(n_tp: int, n_ret: int, n_rel: int, beta: float = 1.0) -> float:
    """Weighted F-measure from counts; 0 when nothing was retrieved and nothing is relevant."""
    b2 = beta * beta
    denominator = b2 * n_rel + n_ret
    return (1.0 + b2) * n_tp / denominator if denominator > 0 else 0.0


def f1(n_tp: int, n_ret: int, n_rel: int) -> float:
    """F1 = 2 tp / (|ret| + |rel|), the harmonic mean of P and R; 0 when undefined."""
    return f_beta(n_tp, n_ret, n_rel, 1.0)


def binarize(labels: Mapping[str, Mapping[str, float]], threshold: float) -> dict[str, set[str]]:
    """Graded labels -> relevant sets (score >= threshold); queries left empty are omitted."""
    relevant: dict[str, set[str]] = {}
    for query_id, graded in labels.items():
        items = {item_id for item_id, score in graded.items() if score >= threshold}
        if items:
            relevant[query_id] = items
    return relevant


def _harmonic(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def query_metrics(result: QueryResult, rel: set[str], ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """All metrics of one query with at least one relevant item."""
    n_rel = len(rel)
    if n_rel == 0:
        raise ValueError("query_metrics needs at least one relevant item")
    tp, ret = result.n_true_positive, result.n_retrieved
    if tp > ret or tp > n_rel or tp < 0:
        raise ValueError(f"inconsistent counts: tp={tp}, retrieved={ret}, relevant={n_rel}")
    out = {
        "P": tp / ret if ret else 0.0,
        "R": tp / n_rel,
        "F1": f1(tp, ret, n_rel),
    }
    max_k = max(ks, default=0)
    hit_ranks = [rank for rank, item in enumerate(result.ranked[:max_k], start=1) if item in rel]
    for k in ks:
        hits = [rank for rank in hit_ranks if rank <= k]
        p_at, r_at = len(hits) / k, len(hits) / n_rel
        dcg = sum(1.0 / math.log2(rank + 1) for rank in hits)
        idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, n_rel) + 1))
        out[f"P@{k}"] = p_at
        out[f"R@{k}"] = r_at
        out[f"F1@{k}"] = _harmonic(p_at, r_at)
        out[f"MRR@{k}"] = 1.0 / hits[0] if hits else 0.0
        out[f"NDCG@{k}"] = dcg / idcg
    return out


def ks_for_depth(depth: int, ks: Sequence[int] = DEFAULT_KS) -> tuple[int, ...]:
    """The cutoffs a ranking of `depth` items can answer: an @k with k > depth would
    count ranks that were never retrieved (R@1000 of a depth-100 run is really R@100)."""
    return tuple(k for k in ks if k <= depth)


def metric_names(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Keys of `compute_metrics`' result, in the order reports print them."""
    names = ["P", "R", "F1"]
    for k in ks:
        names += [f"MRR@{k}", f"NDCG@{k}", f"P@{k}", f"R@{k}", f"F1@{k}"]
    return names


def compute_metrics(
    results: Mapping[str, QueryResult],
    relevant: Mapping[str, set[str]],
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, float]:
    """Macro averages over the queries of `relevant` that have a relevant item.

    Returns the keys of `metric_names(ks)` plus `queries`, the number of queries scored
    (all metrics are 0.0 when it is 0).
    """
    return macro_average(per_query_metrics(results, relevant, ks), ks)


def macro_average(by_query: Mapping[str, Mapping[str, float]], ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """`compute_metrics` from per-query metrics: each metric's mean over the queries."""
    totals = dict.fromkeys(metric_names(ks), 0.0)
    for per_query in by_query.values():
        for name, value in per_query.items():
            totals[name] += value
    scored = len(by_query)
    averaged = {name: (value / scored if scored else 0.0) for name, value in totals.items()}
    averaged["queries"] = scored
    return averaged


def per_query_metrics(
    results: Mapping[str, QueryResult],
    relevant: Mapping[str, set[str]],
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, dict[str, float]]:
    """{query id: its metrics} for the queries `compute_metrics` averages over: a paired
    significance test compares two methods query by query, not by their means."""
    empty = QueryResult(0, 0, [])
    return {query_id: query_metrics(results.get(query_id, empty), rel, ks) for query_id, rel in relevant.items() if rel}
