"""Items, queries and graded labels: the one in-memory shape every loader produces.

A `Dataset` is immutable in spirit: `split` and `subset` return new datasets that share
the item universe (the paper splits along the query dimension only), so evaluation on a
validation split still retrieves from every item.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from cogr_search.errors import InputError


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    description: str = ""


@dataclass(frozen=True)
class Query:
    id: str
    text: str


@dataclass(frozen=True)
class Dataset:
    """A catalog, its queries and graded labels (query id -> item id -> score).

    `relevance_threshold` binarizes the grades: an item is relevant to a query when its
    score is >= the threshold. Unjudged pairs are irrelevant. It is None when neither
    the caller nor the dataset's description says what counts as relevant: the items
    and queries are usable (ingest, keyword generation), but asking for relevant items
    fails with `missing_threshold`, which names the score values the labels hold.
    """

    items: dict[str, Item]
    queries: dict[str, Query]
    labels: dict[str, dict[str, float]]
    relevance_threshold: float | None
    name: str
    path: Path
    layout: str = "beir"
    threshold_source: str = field(default="default", compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)  # remarks for the user (merged repeats)
    missing_threshold: str = field(default="", compare=False)  # the refusal when the threshold is None

    def relevant(self, threshold: float | None = None) -> dict[str, set[str]]:
        """Relevant item ids per query; queries with no relevant item are left out."""
        cut = self.require_threshold() if threshold is None else threshold
        out: dict[str, set[str]] = {}
        for qid, graded in self.labels.items():
            if qid not in self.queries:
                continue
            rel = {iid for iid, score in graded.items() if score >= cut}
            if rel:
                out[qid] = rel
        return out

    def require_threshold(self) -> float:
        """The relevance threshold, or the one-line refusal when the dataset has none."""
        if self.relevance_threshold is None:
            raise InputError(self.missing_threshold or f"{self.path}: no relevance threshold: pass --relevance-threshold X")
        return self.relevance_threshold

    def subset(self, query_ids: Iterable[str]) -> Dataset:
        """The same items, only the given queries (and their labels)."""
        wanted = list(dict.fromkeys(query_ids))
        unknown = [q for q in wanted if q not in self.queries]
        if unknown:
            raise InputError(f"{self.path}: unknown query id {unknown[0]!r} in subset")
        keep = set(wanted)
        return replace(
            self,
            queries={q: self.queries[q] for q in wanted},
            labels={q: g for q, g in self.labels.items() if q in keep},
        )

    def split(self, fraction: float = 0.1, seed: int = 0) -> tuple[Dataset, Dataset]:
        """(train, val) along the query dimension, seeded; every item stays in both.

        Query ids are sorted before shuffling so the split does not depend on file order.
        Each side keeps at least one query (of two or more): a split with nothing to train
        on, or nothing to score, is of no use.
        """
        if not 0.0 < fraction < 1.0:
            raise InputError(f"split fraction must be between 0 and 1, got {fraction}")
        ids = sorted(self.queries)
        random.Random(seed).shuffle(ids)
        n_val = min(len(ids) - 1, max(1, round(len(ids) * fraction))) if len(ids) > 1 else 0
        val_ids = set(ids[:n_val])
        train = [q for q in self.queries if q not in val_ids]
        val = [q for q in self.queries if q in val_ids]
        return self.subset(train), self.subset(val)

    def with_threshold(self, threshold: float, source: str = "--relevance-threshold") -> Dataset:
        return replace(self, relevance_threshold=float(threshold), threshold_source=source)

    def summary(self) -> dict[str, object]:
        """Counts for logs and reports."""
        return {
            "name": self.name,
            "layout": self.layout,
            "items": len(self.items),
            "queries": len(self.queries),
            "judged_pairs": sum(len(g) for g in self.labels.values()),
            "queries_with_relevant": len(self.relevant()) if self.relevance_threshold is not None else None,
            "relevance_threshold": self.relevance_threshold,
        }
