"""A catalog grown by copying: Home Depot at 4M items without 4M items' worth of Python objects.

`bench rewards --scale` needs catalogs of 220k to 4M items with keywords, queries and
labels. Real ones are not at hand, so the base catalog is repeated: copy c of item `i`
is item `i@c`, copy c of query `q` is query `q@c`, and `q@c` is relevant to `i@c`
exactly where `q` is relevant to `i`. The query/item ratio stays the base catalog's.

Two vocabularies:
- `per-copy`: copy c's keywords, titles and query texts carry a tag (" c7"), so each
  copy has a vocabulary of its own and every posting list keeps the base catalog's
  length. The work per reward is then the same at every size, so any growth in time
  per reward is the implementation's (a catalog of many distinct products);
- `shared`: copies are identical, so every posting, retrieved set and Q_cand grows
  with the number of copies (a catalog of many near-duplicates); the work per reward
  itself grows, whatever the implementation.

The mappings are computed on access: only the base catalog is held in memory, so the
RSS measured around an index build is the index's, not the synthetic input's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from cogr_search.bench.rewards import KeywordSets

Vocabulary = Literal["per-copy", "shared"]
VOCABULARIES: tuple[str, ...] = ("per-copy", "shared")
SEPARATOR = "@"

V = TypeVar("V")


def copy_id(base_id: str, copy: int) -> str:
    """Copy 0 keeps the base id, so one copy is the base catalog itself."""
    return base_id if copy == 0 else f"{base_id}{SEPARATOR}{copy}"


class _Copies(Mapping[str, V]):
    """`count` entries: base entries repeated copy after copy, values tagged per copy."""

    def __init__(self, base_ids: Sequence[str], values: Mapping[str, object], count: int,
                 tag: Callable[[object, int], V]) -> None:
        self._ids = list(base_ids)
        self._positions = {base_id: n for n, base_id in enumerate(self._ids)}
        self._values = values
        self._count = count
        self._tag = tag

    def _locate(self, key: str) -> tuple[str, int] | None:
        if key in self._positions:
            base, copy = key, 0
        else:
            base, _, suffix = key.rpartition(SEPARATOR)
            if base not in self._positions or not suffix.isdigit():
                return None
            copy = int(suffix)
        if copy * len(self._ids) + self._positions[base] >= self._count or base not in self._values:
            return None
        return base, copy

    def __getitem__(self, key: str) -> V:
        found = self._locate(key)
        if found is None:
            raise KeyError(key)
        return self._tag(self._values[found[0]], found[1])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._locate(key) is not None

    def __iter__(self) -> Iterator[str]:
        n = len(self._ids)
        for k in range(self._count):
            base = self._ids[k % n]
            if base in self._values:
                yield copy_id(base, k // n)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass
class ScaledCatalog:
    """Titles, keywords, query texts and labels of `n_items` items, as lazy mappings."""

    n_items: int
    n_queries: int
    copies: int
    vocabulary: str
    titles: Mapping[str, str]
    item_keywords: Mapping[str, list[str]]
    query_texts: Mapping[str, str]
    query_keywords: Mapping[str, list[str]]
    relevant: Mapping[str, set[str]]

    def tag_keywords(self, keywords: Sequence[str], copy: int) -> list[str]:
        """Base keywords as copy `copy` spells them (candidates are made on the base)."""
        return _tag_list(self.vocabulary)(keywords, copy)

    def full_copies(self, base_items: int) -> int:
        """Copies whose items are all present (candidates go to these)."""
        return max(1, self.n_items // base_items)


def _tag_text(vocabulary: str) -> Callable[[str, int], str]:
    if vocabulary == "shared":
        return lambda text, copy: text
    return lambda text, copy: text if copy == 0 or not text else f"{text} c{copy}"


def _tag_list(vocabulary: str) -> Callable[[Sequence[str], int], list[str]]:
    tag = _tag_text(vocabulary)
    return lambda keywords, copy: [tag(k, copy) for k in keywords]


def scale(base: KeywordSets, n_items: int, vocabulary: str = "per-copy") -> ScaledCatalog:
    """The base catalog copied up to `n_items` items and the matching share of queries."""
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"vocabulary must be one of {', '.join(VOCABULARIES)}, not {vocabulary!r}")
    titles, query_texts = base.titles, base.query_texts
    base_items, base_queries = len(titles), len(query_texts)
    n_queries = max(1, round(n_items * base_queries / base_items))
    item_ids, query_ids = list(titles), list(query_texts)
    text, listed = _tag_text(vocabulary), _tag_list(vocabulary)
    n_of_item = {item_id: n for n, item_id in enumerate(item_ids)}

    def labels(rel: object, copy: int) -> set[str]:
        # only items present at this size: a copy cut short keeps its labels consistent
        return {copy_id(i, copy) for i in rel if copy * base_items + n_of_item.get(i, base_items) < n_items}

    return ScaledCatalog(
        n_items=n_items,
        n_queries=n_queries,
        copies=math.ceil(n_items / base_items),
        vocabulary=vocabulary,
        titles=_Copies(item_ids, titles, n_items, text),
        item_keywords=_Copies(item_ids, base.item_keywords, n_items, listed),
        query_texts=_Copies(query_ids, query_texts, n_queries, text),
        query_keywords=_Copies(query_ids, base.query_keywords, n_queries, listed),
        relevant=_Copies(query_ids, base.relevant, n_queries, labels),
    )
