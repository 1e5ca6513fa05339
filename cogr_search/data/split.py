"""Which queries an evaluation scores, and which it tunes cutoffs on (paper section 3.1).

The paper splits along the query dimension and keeps every item; baselines choose their
cutoff on the training queries and are reported on the validation queries. The default
is that protocol: score the seeded validation split (the one Phase 1 trains around).
A cutoff is never tuned on the queries being scored: `train` tunes on the validation
queries, and `all` (every query) has nothing left to tune on, so a ranked baseline needs
`--cutoff K` or `--tune-on DATA` there.

A training run records its own split (`split.json` in the run directory: the query ids
it trained on and held out, under its own fraction, seed and caps); evaluating a run
uses exactly those ids (`run_split`) instead of re-deriving a split from flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cogr_search.data.model import Dataset
from cogr_search.errors import InputError

SPLITS = ("train", "val", "all")
DEFAULT_SPLIT = "val"
DEFAULT_VAL_FRACTION = 0.1
DEFAULT_SEED = 0
RUN_SPLIT_KEYS = {"train": "train_queries", "val": "val_queries"}


@dataclass(frozen=True)
class EvalSplit:
    """The queries to score and the queries a cutoff may be tuned on (None: none may)."""

    evaluate: Dataset
    tune: Dataset | None
    split: str
    tune_source: str
    settings: Mapping[str, object] = ()  # how the split was made, for the report

    def __post_init__(self) -> None:
        object.__setattr__(self, "settings", dict(self.settings))


def choose_split(
    dataset: Dataset,
    split: str | None = DEFAULT_SPLIT,
    fraction: float = DEFAULT_VAL_FRACTION,
    seed: int = DEFAULT_SEED,
) -> EvalSplit:
    """`val` (default): score the seeded validation queries, tune on the training ones;
    `train`: score the training queries, tune on the validation ones; `all`: every
    query, with no tuning queries."""
    split = DEFAULT_SPLIT if split is None else split
    if split not in SPLITS:
        raise InputError(f"--split {split!r}: expected one of {', '.join(SPLITS)}")
    if not dataset.queries:
        raise InputError(f"{dataset.path}: the dataset has no queries to evaluate")
    if split == "all":
        return EvalSplit(dataset, None, "all", "none (every query is scored)")
    train, val = dataset.split(fraction, seed)
    settings = {"val_fraction": fraction, "seed": seed, "split_source": "seeded split of DATA"}
    if split == "train":
        return EvalSplit(train, val, "train", f"val split (fraction {fraction:g}, seed {seed})", settings)
    return EvalSplit(val, train, "val", f"train split (fraction {1 - fraction:g}, seed {seed})", settings)


def run_split(dataset: Dataset, recorded: Mapping[str, object], where: Path, split: str | None = DEFAULT_SPLIT) -> EvalSplit:
    """The split a training run recorded (`split.json`): score its `val` (default) or
    `train` queries, tune on the other part. Every id must be a query of DATA."""
    split = DEFAULT_SPLIT if split is None else split
    if split not in RUN_SPLIT_KEYS:
        raise InputError(f"--split {split!r} with --run: expected train or val (the run's own split)")
    parts = {name: _recorded_ids(recorded, key, where) for name, key in RUN_SPLIT_KEYS.items()}
    for name, ids in parts.items():
        unknown = [q for q in ids if q not in dataset.queries]
        if unknown:
            raise InputError(
                f"{where}: {len(unknown)} {name} query id(s) are not queries of {dataset.path} (e.g. {unknown[0]!r}); "
                "evaluate a run on the dataset it was trained on"
            )
    scored = parts[split]
    if not scored:
        raise InputError(f"{where}: the run holds out no {split} queries (trained with val_fraction 0?)")
    other = "train" if split == "val" else "val"
    tune = dataset.subset(parts[other]) if parts[other] else None
    settings = {"split_source": str(where)}
    return EvalSplit(dataset.subset(scored), tune, split, f"the run's {other} queries ({where})", settings)


def _recorded_ids(recorded: Mapping[str, object], key: str, where: Path) -> Sequence[str]:
    ids = recorded.get(key)
    if not isinstance(ids, list) or not all(isinstance(q, str) for q in ids):
        raise InputError(f"{where}: field {key!r}: expected a list of query ids")
    return ids
