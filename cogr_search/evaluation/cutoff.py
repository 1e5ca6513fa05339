"""The paper's cutoff protocol for ranked baselines (section 4.1).

A ranked retriever has no retrieved *set*, so its P, R and F1 need a cutoff: keep the top
K of every query. The paper sweeps K on the training queries, keeps the K with the best
macro F1 there, and reports P/R/F1 at that K on the validation queries. Sweeping every K
from 1 to the ranking depth is cheap with cumulative hit counts, so no grid is needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cogr_search.errors import CogrError
from cogr_search.metrics import QueryResult


@dataclass(frozen=True)
class CutoffChoice:
    """The chosen K, the macro F1 it gave where it was chosen, and on how many queries."""

    k: int
    f1: float
    queries: int
    max_k: int


def _cumulative_hits(ranked: Sequence[str], rel: set[str], depth: int) -> np.ndarray:
    """tp@K for K = 1..depth (flat after the end of a short ranking)."""
    hits = np.zeros(depth, dtype=np.int32)
    for rank, item in enumerate(ranked[:depth]):
        if item in rel:
            hits[rank] = 1
    return np.cumsum(hits)


def f1_by_cutoff(ranked: Mapping[str, Sequence[str]], relevant: Mapping[str, set[str]], max_k: int) -> np.ndarray:
    """Macro F1 for every K in 1..max_k over the queries of `relevant` (index K-1).

    A query ranked shorter than K retrieves only what it has; a query with no ranking
    retrieves nothing, so its F1 is 0 at every K.
    """
    if max_k < 1:
        raise CogrError(f"cutoff depth must be at least 1, got {max_k}")
    ks = np.arange(1, max_k + 1, dtype=np.float64)
    total = np.zeros(max_k, dtype=np.float64)
    n = 0
    for query_id, rel in relevant.items():
        if not rel:
            continue
        n += 1
        ranking = ranked.get(query_id, [])
        tp = _cumulative_hits(ranking, rel, max_k)
        n_ret = np.minimum(ks, len(ranking))
        total += 2.0 * tp / (n_ret + len(rel))
    return total / n if n else total


def tune_cutoff(ranked: Mapping[str, Sequence[str]], relevant: Mapping[str, set[str]], max_k: int = 1000) -> CutoffChoice:
    """The K in 1..max_k with the best macro F1 (the smallest such K on ties)."""
    scored = {q: r for q, r in relevant.items() if r}
    if not scored:
        raise CogrError("cannot tune a cutoff: no tuning query has a relevant item")
    curve = f1_by_cutoff(ranked, scored, max_k)
    best = int(np.argmax(curve))
    return CutoffChoice(k=best + 1, f1=float(curve[best]), queries=len(scored), max_k=max_k)


def results_at_cutoff(
    ranked: Mapping[str, Sequence[str]], relevant: Mapping[str, set[str]], k: int
) -> dict[str, QueryResult]:
    """QueryResults whose retrieved set is the top k; the full ranking stays for @k metrics."""
    out: dict[str, QueryResult] = {}
    for query_id, ranking in ranked.items():
        rel = relevant.get(query_id, set())
        top = ranking[:k]
        out[query_id] = QueryResult(len(top), sum(1 for item in top if item in rel), list(ranking))
    return out


CURVE_GRID = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000)


def cutoff_curve(
    ranked: Mapping[str, Sequence[str]], relevant: Mapping[str, set[str]], grid: Sequence[int] = CURVE_GRID
) -> dict[str, list[float]]:
    """Macro P, R and F1 when each query keeps its top k, for k in `grid` (for plots).

    Precision divides by what was kept, min(k, ranking length), matching the cutoff
    protocol above rather than P@k's fixed k.
    """
    max_k = max(grid)
    ks = np.asarray(grid, dtype=np.int64)
    p = np.zeros(len(ks))
    r = np.zeros(len(ks))
    f = np.zeros(len(ks))
    n = 0
    for query_id, rel in relevant.items():
        if not rel:
            continue
        n += 1
        ranking = ranked.get(query_id, [])
        tp = _cumulative_hits(ranking, rel, max_k)[ks - 1].astype(np.float64)
        kept = np.minimum(ks, len(ranking)).astype(np.float64)
        p += np.divide(tp, kept, out=np.zeros_like(tp), where=kept > 0)
        r += tp / len(rel)
        f += 2.0 * tp / (kept + len(rel))
    scale = 1.0 / n if n else 0.0
    return {"k": [int(k) for k in ks], "P": list(p * scale), "R": list(r * scale), "F1": list(f * scale)}
