"""What changed in an index since a point in time, from its shards' sequence numbers.

An online sync copies a version while the application keeps writing to it, then copies
again what changed meanwhile (DESIGN.md section 3). Every index, update (partial ones
too) and delete gets the next sequence number of its shard, and `_seq_no` can be queried
with a range in both engines, so "changed since" needs no field of our own in the
documents and no clock: a *mark* is each shard's global checkpoint (every operation at
or below it is processed on every copy of the shard, so a refresh makes it visible), and
the changed documents are those above it. Deleted documents leave no hit; they are
found by comparing ids per range (`extra_ids`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster.bulk import scan
from cogr_search.cluster.client import Cluster
from cogr_search.errors import CogrError
from cogr_search.cluster.eval import msearch

Marks = dict[int, int]
"""Shard number -> the sequence number up to which that shard has been copied."""

QUIET_WAIT_S = 30.0


def _primary_seq_nos(cluster: Cluster, index: str) -> dict[int, dict]:
    found = cluster.call(cluster.client.indices.stats, index=index, level="shards",
                         filter_path=f"indices.{index}.shards.*.seq_no,indices.{index}.shards.*.routing.primary")
    shards = found.get("indices", {}).get(index, {}).get("shards", {})
    return {int(n): next(c["seq_no"] for c in copies if c.get("routing", {}).get("primary", True))
            for n, copies in shards.items()}


def marks(cluster: Cluster, index: str) -> Marks:
    """Each shard's global checkpoint: everything at or below it can be read after a refresh."""
    return {shard: int(seq["global_checkpoint"]) for shard, seq in _primary_seq_nos(cluster, index).items()}


def wait_quiet(cluster: Cluster, index: str, timeout_s: float = QUIET_WAIT_S) -> Marks:
    """Once writes are blocked: wait until no accepted write is still in flight (each shard's
    checkpoint has reached its highest sequence number), and return those marks."""
    deadline = time.monotonic() + timeout_s
    while True:
        seq_nos = _primary_seq_nos(cluster, index)
        if all(int(s["global_checkpoint"]) >= int(s["max_seq_no"]) for s in seq_nos.values()):
            return {shard: int(s["max_seq_no"]) for shard, s in seq_nos.items()}
        if time.monotonic() > deadline:
            raise CogrError(f"{index}: writes still in flight {timeout_s:g}s after the write block")
        time.sleep(0.05)  # polling the shard checkpoints, not waiting for a guess


Source = bool | dict
"""A search's `_source`: True for all of it, or `{"excludes": [...]}`."""


def _by_shard(cluster: Cluster, index: str, marks: Marks, bound: str, source: Source) -> Iterator[list[dict]]:
    for shard, mark in sorted(marks.items()):
        preference = f"_shards:{shard}" if len(marks) > 1 else None
        yield from scan(cluster, index, {"range": {"_seq_no": {bound: mark}}}, source=source, preference=preference)


def changed_since(cluster: Cluster, index: str, since: Marks, source: Source = True) -> Iterator[list[dict]]:
    """Pages of the documents written (indexed or updated) after `since`, shard by shard.

    The caller refreshes `index` after taking the marks it will pass next time."""
    return _by_shard(cluster, index, since, "gt", source)


def as_of(cluster: Cluster, index: str, at: Marks, source: Source = True) -> Iterator[list[dict]]:
    """Pages of the documents last written at or before `at`: the index as it was then,
    less what was updated or deleted since (a catch-up from `at` brings those)."""
    return _by_shard(cluster, index, at, "lte", source)


def ids_of(cluster: Cluster, index: str, query: dict | None = None) -> Iterator[str]:
    """The ids of `index` (or of its documents matching `query`), without their sources."""
    for page in scan(cluster, index, query, source=False):
        for hit in page:
            yield hit["_id"]


BUCKET = 1000


def id_boundaries(ids: Iterable[str]) -> list[str]:
    """Every `BUCKET`-th of these ids in index order: edges of id ranges of about `BUCKET`
    documents each, for `extra_ids`. A sync takes them from the ids its first pass copied,
    which costs no request. (Python orders str by code point, Lucene orders keywords by
    UTF-8 bytes: the same order.)"""
    return sorted(ids)[BUCKET - 1 :: BUCKET]


Edges = list[str | None]
"""Ids that cut the id space into consecutive ranges (`low < id <= high`); None is open."""

FANOUT = 16
"""Ranges counted together before a differing group is counted range by range."""


def _range_query(low: str | None, high: str | None) -> dict:
    bounds = {**({"gt": low} if low is not None else {}), **({"lte": high} if high is not None else {})}
    return {"range": {doc_fields.ID: bounds}} if bounds else {"match_all": {}}


def _groups(edges: Edges) -> list[Edges]:
    """The ranges between `edges`, up to FANOUT groups of consecutive ones (each group its
    own edges), or the single ranges where there are no more than FANOUT."""
    n = len(edges) - 1
    step = 1 if n <= FANOUT else -(-n // FANOUT)
    return [edges[i : min(i + step, n) + 1] for i in range(0, n, step)]


def _differing(cluster: Cluster, target: str, source: str, edges: Edges) -> list[tuple[dict, int, int]]:
    """The single ranges whose counts differ (query, target's count, source's), found top
    down: groups of ranges are counted first and only a differing group range by range,
    one `_msearch` per index and level. A few deletes among the 220 ranges of 219k items
    cost about 50 counts instead of 440; on the freeze's path that is most of its time."""
    found: list[tuple[dict, int, int]] = []
    pending = [edges]
    while pending:
        groups = [group for edges_ in pending for group in _groups(edges_)]
        queries = [_range_query(group[0], group[-1]) for group in groups]
        pending = []
        for group, query, mine, theirs in zip(groups, queries, _bucket_counts(cluster, target, queries),
                                              _bucket_counts(cluster, source, queries)):
            if mine == theirs:
                continue
            if len(group) == 2:
                found.append((query, mine, theirs))
            else:
                pending.append(group)
    return found


def _bucket_counts(cluster: Cluster, index: str, ranges: list[dict]) -> list[int]:
    """Documents per id range, as counts in one `_msearch`: each range query visits only
    its own terms, so the whole costs one pass over the ids (a `filters` aggregation
    would test every document against every range)."""
    bodies = [{"size": 0, "query": r, "track_total_hits": True} for r in ranges]
    return [int(r["hits"]["total"]["value"]) for r in msearch(cluster, index, bodies, ["responses.hits.total"])]


ID_WINDOW = 10_000
"""Most ids one search returns (`index.max_result_window`'s default)."""
ID_SLACK = 100
"""Room for documents added to a range between its count and the ids search."""


def _range_ids(cluster: Cluster, index: str, ranges: list[dict], counts: list[int]) -> list[set[str]]:
    """The ids in each range, from one `_msearch` sized by the ranges' counts; a range
    that may hold more than its search returned (it grew, or it is past the window) is
    scanned instead, so every set is complete."""
    sizes = [min(count + ID_SLACK, ID_WINDOW) for count in counts]
    bodies = [{"size": size, "query": r, "_source": False, "track_total_hits": False, "sort": ["_doc"]}
              for r, size in zip(ranges, sizes)]
    found = msearch(cluster, index, bodies, ["responses.hits.hits._id"])
    ids = []
    for query, size, response in zip(ranges, sizes, found):
        hits = response.get("hits", {}).get("hits", [])
        ids.append({hit["_id"] for hit in hits} if len(hits) < size else set(ids_of(cluster, index, query)))
    return ids


def extra_ids(cluster: Cluster, target: str, source: str, boundaries: list[str]) -> list[str]:
    """Ids in `target` that `source` no longer has (deleted there): the id ranges whose
    counts differ (`_differing`), then their ids in one request per index, so the cost
    follows the number of deletes, not the catalog's size. Any `boundaries` give the whole
    difference once `target` holds every document of `source` (after the freeze's
    catch-up: no range of the copy then counts less than the source's); before that, a
    range or group where the copy lacks a new document and still holds a deleted one
    counts equal and waits for the next call."""
    differing = _differing(cluster, target, source, [None, *boundaries, None])
    if not differing:
        return []
    queries = [query for query, _, _ in differing]
    held = _range_ids(cluster, target, queries, [mine for _, mine, _ in differing])
    kept = _range_ids(cluster, source, queries, [theirs for _, _, theirs in differing])
    return [doc_id for have, keep in zip(held, kept) for doc_id in sorted(have - keep)]
