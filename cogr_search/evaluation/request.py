"""`cogr-search eval` as one library call: which options go together, which queries are
scored, and which method scores them.

Why here and not in the CLI: the rules (cogr's options apply to cogr only, `--run` brings
its own split, a ranked baseline needs a cutoff or a tuning set) are the same for the
Python API, and were the command's alone before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cogr_search.atomic import atomic_open, check_writable
from cogr_search.cluster.client import Cluster
from cogr_search.data import Dataset, choose_split, load_dataset
from cogr_search.data.split import DEFAULT_SEED, DEFAULT_VAL_FRACTION
from cogr_search.errors import InputError
from cogr_search.evaluation import methods
from cogr_search.settings import Settings

Method = Literal["bm25", "cogr", "dense", "hybrid"]
METHODS: tuple[Method, ...] = ("bm25", "cogr", "dense", "hybrid")
Notify = Callable[[str], None]


@dataclass(frozen=True)
class EvalRequest:
    """What `eval` was asked to score; None means the default (or the run's)."""

    data: Path
    method: Method
    alias: str | None = None
    split: str = "val"
    val_fraction: float | None = None
    seed: int | None = None
    relevance_threshold: float | None = None
    cutoff: int | None = None
    tune_on: Path | None = None
    depth: int = 1000
    fields: str = "title,description"
    query_keywords: Path | None = None
    run: str | None = None
    round: int | None = None
    expander: str = "auto"
    backend: str = "opensearch"
    batch_size: int = 64
    out: Path | None = None


def check_request(request: EvalRequest) -> None:
    """Refuse, in one line, options that do not go together (before any work is done)."""
    cogr_only = (request.query_keywords or request.round is not None or request.backend != "opensearch"
                 or request.expander != "auto")
    if request.method != "cogr" and cogr_only:
        raise InputError("--query-keywords, --round, --expander and --backend apply to --method cogr only")
    if request.method == "cogr" and (request.cutoff or request.tune_on):
        raise InputError("--cutoff and --tune-on apply to ranked baselines (bm25, dense), not cogr")
    if request.method == "cogr" and request.query_keywords is None and request.run is None:
        raise InputError("--method cogr needs --query-keywords FILE or --run RUN")
    if request.round is not None and request.run is None:
        raise InputError("--round needs --run RUN (the run whose round it is)")
    if request.run is not None and (request.val_fraction is not None or request.seed is not None):
        raise InputError("--val-fraction and --seed do not apply with --run: the run's own split.json is used")
    if request.method != "dense" and not request.alias:
        raise InputError(f"--method {request.method} needs --index NAME (the alias the catalog was ingested into)")


def evaluate(request: EvalRequest, settings: Settings, connect: Callable[[], Cluster], progress: bool = False,
             notify: Notify = lambda _m: None) -> dict:
    """Score the request's method on its queries; the result as `--out` writes it.

    ``connect`` opens the cluster only for the methods that search one (dense does not)."""
    check_request(request)
    if request.out is not None:
        check_writable(request.out)  # fail before the evaluation, not after it
    dataset = load_dataset(request.data, relevance_threshold=request.relevance_threshold)
    for note in dataset.notes:
        notify(f"note: {note}")
    dataset.require_threshold()
    runs_dir = settings.runs_dir
    chosen = _chosen_split(request, dataset, runs_dir)
    tune_set = load_dataset(request.tune_on, relevance_threshold=request.relevance_threshold) if request.tune_on else None
    if tune_set is not None:
        tune_set.require_threshold()
    if request.method == "dense":
        result = methods.evaluate_dense(chosen, settings.home / "cache" / "dense", tune_set, request.cutoff,
                                        request.depth, request.batch_size, progress)
    else:
        cluster = connect()
        overlap, warnings = methods.check_index(cluster, request.alias, chosen.evaluate)
        for warning in warnings:
            notify(f"warning: {warning}")
        result = _search_method(request, cluster, chosen, tune_set, settings, progress)
        result["judged_items_in_index"] = overlap
    if request.out is not None:
        with atomic_open(request.out) as handle:  # an earlier result file is replaced whole or kept
            handle.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result


def _chosen_split(request: EvalRequest, dataset: Dataset, runs_dir: Path):  # noqa: ANN202 - data's split record
    """The queries scored: the run's own split (or, with `all`, every query outside its
    training set), else DATA's split by fraction and seed."""
    if request.run is not None and request.split == "all":
        return methods.split_of_other(dataset, request.run, runs_dir)
    if request.run is not None:
        return methods.split_of_run(dataset, request.run, runs_dir, request.split)
    return choose_split(dataset, request.split, DEFAULT_VAL_FRACTION if request.val_fraction is None else request.val_fraction,
                        DEFAULT_SEED if request.seed is None else request.seed)


def _search_method(request: EvalRequest, cluster: Cluster, chosen, tune_set, settings: Settings,  # noqa: ANN001
                   progress: bool) -> dict:
    """BM25, hybrid or CoGR on the cluster."""
    if request.method == "bm25":
        fields = [f.strip() for f in request.fields.split(",") if f.strip()]
        return methods.evaluate_bm25(cluster, request.alias, chosen, tune_set, request.cutoff, request.depth, fields,
                                     request.batch_size, progress)
    if request.method == "hybrid":
        return methods.evaluate_hybrid(cluster, request.alias, chosen, tune_set, request.cutoff, request.depth,
                                       request.batch_size, progress)
    if request.query_keywords is None:
        return methods.evaluate_cogr_run(cluster, request.alias, chosen, request.run, settings.home / "cache" / "eval-keywords",
                                         request.round, settings.runs_dir, request.backend, request.depth,
                                         request.batch_size, progress, expander=request.expander)
    return methods.evaluate_cogr_file(cluster, request.alias, chosen, request.query_keywords, request.run, request.round,
                                      settings.runs_dir, request.backend, request.depth, request.batch_size, progress)
