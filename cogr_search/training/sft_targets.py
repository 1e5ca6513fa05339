"""Phase 1 training targets (paper Algorithm 1), in plain Python.

The query-side target pools the base model's keywords of every relevant item (a
multiset) and keeps the N most frequent: this is what makes a query's keywords overlap
its relevant items' keywords before any RL.

Ties are broken deterministically so a run is reproducible whatever the order of sets
and dicts: by count (descending), then by the best position the keyword reached in any
item's list (earlier = more salient to the generator), then alphabetically.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cogr_search.keywords import keyword_set


@dataclass(frozen=True)
class RankedKeyword:
    keyword: str
    count: int
    best_position: int


def pooled_keywords(keyword_sets: Iterable[list[str]]) -> list[RankedKeyword]:
    """Every keyword of the multiset union, ranked by the rule in the module docstring.

    Each set counts a keyword once (sets are de-duplicated first), so the count is the
    number of relevant items that carry it.
    """
    counts: dict[str, int] = {}
    best: dict[str, int] = {}
    for keywords in keyword_sets:
        for position, keyword in enumerate(keyword_set(keywords)):
            counts[keyword] = counts.get(keyword, 0) + 1
            best[keyword] = min(best.get(keyword, position), position)
    ranked = [RankedKeyword(k, counts[k], best[k]) for k in counts]
    ranked.sort(key=lambda r: (-r.count, r.best_position, r.keyword))
    return ranked


def query_target(item_keywords: Mapping[str, list[str]], relevant_items: Iterable[str], top_n: int = 15) -> list[str]:
    """The top-N pooled keywords of one query's relevant items (missing items skipped)."""
    sets = [item_keywords[item_id] for item_id in sorted(set(relevant_items)) if item_id in item_keywords]
    return [r.keyword for r in pooled_keywords(sets)[:top_n]]


def query_targets(
    item_keywords: Mapping[str, list[str]],
    relevant: Mapping[str, Iterable[str]],
    top_n: int = 15,
) -> dict[str, list[str]]:
    """Targets for every query in `relevant`, in sorted query-id order; queries whose
    relevant items have no keywords get no entry (nothing to learn from)."""
    targets: dict[str, list[str]] = {}
    for query_id in sorted(relevant):
        target = query_target(item_keywords, relevant[query_id], top_n)
        if target:
            targets[query_id] = target
    return targets
