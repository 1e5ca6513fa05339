"""Running one evaluation the same way for every method (paper Table 2 protocol).

Methods differ only in how they retrieve, so they come in as callables:
- a *ranker* (BM25, dense) maps {query id: text} to ranked item ids; its P/R/F1 use a
  cutoff K tuned for best F1 on the tuning queries (or fixed by the caller);
- a *set retriever* (cogr) maps {query id: text} to `QueryResult`s with exact full-set
  counts, so P/R/F1 need no cutoff.
The result is one flat dict: the metric keys of `cogr_search.metrics`, `queries`,
`method`, `queries_per_s`, a `settings` dict saying what produced the numbers, and
`per_query` ({metric: {query id: value}}, rounded to 6 decimals) so that `report` can
test two saved results query by query (`evaluation/significance.py`).

`queries_per_s` is the number of queries retrieved divided by the wall time spent in the
retrieval callables (tuning queries included; item embedding and index building are
not, they are reported separately when a method has them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone

from cogr_search.data import Dataset, EvalSplit
from cogr_search.errors import InputError
from cogr_search.evaluation.cutoff import CURVE_GRID, cutoff_curve, results_at_cutoff, tune_cutoff
from cogr_search.metrics import QueryResult, ks_for_depth, macro_average, per_query_metrics

Ranker = Callable[[Mapping[str, str]], dict[str, list[str]]]
SetRetriever = Callable[[Mapping[str, str], Mapping[str, set[str]]], dict[str, QueryResult]]
DEFAULT_DEPTH = 1000


def query_texts(dataset: Dataset) -> dict[str, str]:
    return {qid: q.text for qid, q in dataset.queries.items()}


def check_same_catalog(evaluated: Dataset, tune: Dataset) -> None:
    """A tuning set from another file must label items of the evaluated catalog."""
    unknown = {iid for graded in tune.labels.values() for iid in graded} - evaluated.items.keys()
    if unknown:
        example = sorted(unknown)[0]
        raise InputError(
            f"--tune-on {tune.path}: {len(unknown)} labelled items are not in {evaluated.path} (e.g. {example!r}); "
            "the tuning set must be over the same catalog"
        )


def _rounded(curve: dict[str, list[float]]) -> dict[str, list[float]]:
    return {key: [round(v, 6) for v in values] for key, values in curve.items()}


def _curve(ranked: Mapping[str, Sequence[str]], relevant: Mapping[str, set[str]], depth: int) -> dict[str, list[float]]:
    """P/R/F1 per cutoff for plots, on the grid points a depth-`depth` ranking reaches."""
    grid = [k for k in CURVE_GRID if k <= depth] or [depth]
    return _rounded(cutoff_curve(ranked, relevant, grid))


def _scored(results: Mapping[str, QueryResult], relevant: Mapping[str, set[str]], depth: int) -> dict[str, object]:
    """The macro averages and, per metric, every scored query's value."""
    by_query = per_query_metrics(results, relevant, ks_for_depth(depth))
    metrics: dict[str, object] = dict(macro_average(by_query, ks_for_depth(depth)))
    names = [name for name in metrics if name != "queries"]
    metrics["per_query"] = {name: {q: round(values[name], 6) for q, values in by_query.items()} for name in names}
    return metrics


def _timed(fn: Callable[[], dict]) -> tuple[dict, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def base_settings(split: EvalSplit, extra: Mapping[str, object]) -> dict[str, object]:
    data = split.evaluate
    return {
        "dataset": data.name,
        "data": str(data.path),
        "items": len(data.items),
        "split": split.split,
        "queries_in_split": len(data.queries),
        "relevance_threshold": data.relevance_threshold,
        "relevance_threshold_source": data.threshold_source,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        **split.settings,
        **extra,
    }


def evaluate_ranked(
    method: str,
    rank: Ranker,
    split: EvalSplit,
    cutoff: int | None = None,
    tune_on: Dataset | None = None,
    depth: int = DEFAULT_DEPTH,
    settings: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Rank, choose the cutoff (fixed, or best F1 on the tuning queries), score.

    @k metrics are reported only for k <= depth.
    """
    if cutoff is not None and not 1 <= cutoff <= depth:
        raise InputError(f"--cutoff {cutoff}: must be between 1 and the ranking depth {depth}")
    evaluated = split.evaluate
    texts = query_texts(evaluated)
    tune_set = tune_on or split.tune
    if tune_on is not None:
        check_same_catalog(evaluated, tune_on)
    needs_tuning = cutoff is None
    if needs_tuning and tune_set is None:
        raise InputError(
            f"--split {split.split}: every query is scored, so none is left to tune the {method} cutoff on; "
            "give --cutoff K or --tune-on DATA (a cutoff is never tuned on the scored queries)"
        )
    if needs_tuning and tune_on is None:
        overlap = tune_set.queries.keys() & evaluated.queries.keys()
        if overlap:
            raise InputError(f"the tuning and scored queries overlap ({len(overlap)} queries, e.g. {sorted(overlap)[0]!r})")
    if needs_tuning and tune_on is None:
        texts = {**query_texts(split.tune), **texts}  # same id space: rank each query once
    ranked, seconds = _timed(lambda: rank(texts))
    n_ranked = len(texts)
    tune_ranked = ranked
    if needs_tuning and tune_on is not None:
        tune_ranked, tune_seconds = _timed(lambda: rank(query_texts(tune_on)))
        seconds += tune_seconds
        n_ranked += len(tune_on.queries)
    relevant = evaluated.relevant()
    info: dict[str, object] = {}
    if needs_tuning:
        choice = tune_cutoff(tune_ranked, tune_set.relevant(), max_k=depth)
        cutoff = choice.k
        source = f"--tune-on {tune_on.path}" if tune_on is not None else split.tune_source
        info = {"cutoff_source": f"best F1 on {source}", "cutoff_tune_f1": round(choice.f1, 6), "cutoff_tune_queries": choice.queries}
    else:
        info = {"cutoff_source": "--cutoff"}
    evaluated_ranked = {q: ranked.get(q, []) for q in evaluated.queries}
    results = results_at_cutoff(evaluated_ranked, relevant, cutoff)
    metrics = _scored(results, relevant, depth)
    return {
        **metrics,
        "method": method,
        "curve": _curve(evaluated_ranked, relevant, depth),
        "queries_per_s": round(n_ranked / seconds, 2) if seconds > 0 else None,
        "settings": base_settings(
            split,
            {"cutoff": cutoff, **info, "depth": depth, "queries_retrieved": n_ranked, "retrieval_seconds": round(seconds, 3), **(settings or {})},
        ),
    }


def evaluate_sets(
    method: str,
    retrieve: SetRetriever,
    split: EvalSplit,
    depth: int = DEFAULT_DEPTH,
    settings: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Score a method that returns exact retrieved-set counts (no cutoff involved);
    `depth` is how long its ranked lists are, so @k metrics stop at k <= depth."""
    evaluated = split.evaluate
    relevant = evaluated.relevant()
    texts = query_texts(evaluated)
    results, seconds = _timed(lambda: retrieve(texts, relevant))
    metrics = _scored(results, relevant, depth)
    return {
        **metrics,
        "method": method,
        "curve": _curve({q: r.ranked for q, r in results.items()}, relevant, depth),
        "queries_per_s": round(len(texts) / seconds, 2) if seconds > 0 else None,
        "settings": base_settings(
            split, {"queries_retrieved": len(texts), "retrieval_seconds": round(seconds, 3), **(settings or {})}
        ),
    }
