"""Which queries an evaluation scores, and which it tunes cutoffs on (paper section 3.1).

The paper splits along the query dimension and keeps every item; baselines choose their
cutoff on the training queries and are reported on the validation queries. Without a
split, every query of the dataset is evaluated and, unless the caller fixes a cutoff or
names another tuning set, the cutoff is tuned on those same queries (in-sample; the
report says so).
"""

from __future__ import annotations

from dataclasses import dataclass

from cogr_search.data.model import Dataset
from cogr_search.errors import InputError

SPLITS = ("train", "val", "all")
DEFAULT_VAL_FRACTION = 0.1
DEFAULT_SEED = 0


@dataclass(frozen=True)
class EvalSplit:
    """The queries to score and the queries to tune on, over the same items."""

    evaluate: Dataset
    tune: Dataset
    split: str
    tune_source: str


def choose_split(
    dataset: Dataset,
    split: str | None,
    fraction: float = DEFAULT_VAL_FRACTION,
    seed: int = DEFAULT_SEED,
) -> EvalSplit:
    """`val`: score the seeded validation queries, tune on the rest; `train`: score and
    tune on the training queries; None or `all`: every query, tuned in-sample."""
    if split not in (None, *SPLITS):
        raise InputError(f"--split {split!r}: expected one of {', '.join(SPLITS)}")
    if not dataset.queries:
        raise InputError(f"{dataset.path}: the dataset has no queries to evaluate")
    if split in (None, "all"):
        return EvalSplit(dataset, dataset, "all", "all queries (in-sample)")
    train, val = dataset.split(fraction, seed)
    label = f"train split (fraction {1 - fraction:g}, seed {seed})"
    if split == "train":
        return EvalSplit(train, train, "train", label)
    return EvalSplit(val, train, "val", label)
