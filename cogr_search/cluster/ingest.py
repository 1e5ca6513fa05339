"""Bulk-loading a catalog's items into the index behind an alias.

Resumable by construction: the document `_id` is the item id, so a rerun after a crash
(or on an updated catalog) sends the same documents again and converges. Every document
is written whole, with `cogr_keywords` (DESIGN.md section 1), so an item matches on its
title from the moment it is loaded, as the shadow index assumes. Two modes:
- `index` while no document carries synced keywords (a first load, or a resumed one):
  plain `index` actions with title-only keywords, the fastest bulk path;
- `upsert` once a sync has written keywords: each chunk's stored documents are read
  (`mget`) and merged, so synced keywords and provenance survive a re-ingest (with the
  title keyword replaced when the title changed), unchanged documents are not sent,
  and items new to the index get their title keyword like any other.
All writes go through the one bulk loop (`opensearch.bulk`), behind the client's retries.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from tqdm import tqdm

from cogr_search.progress import progress_bar
from cogr_search.keywords import term
from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster.bulk import BulkFailure, BulkResult, batched, bulk_write, count_failure
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.documents import ItemLike, item_document, item_keywords
from cogr_search.cluster.indices import alias_target, create_index

CHUNK_SIZE = 500
MAX_ID_BYTES = 512  # OpenSearch rejects the whole _bulk request over a longer _id
BLOCKED_HINT = "writes are blocked while a sync copies this version (or one was interrupted: rerun that sync)"


@dataclass
class IngestReport:
    """Counts for the end-of-run summary (and `--json`)."""

    alias: str
    index: str
    alias_created: bool
    mode: str = "index"
    items: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: int = 0
    documents_in_index: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def indexed(self) -> int:
        return self.created + self.updated + self.unchanged

    def as_dict(self) -> dict[str, object]:
        return {
            "alias": self.alias,
            "index": self.index,
            "alias_created": self.alias_created,
            "mode": self.mode,
            "items": self.items,
            "indexed": self.indexed,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "failed": self.failed,
            "documents_in_index": self.documents_in_index,
            "seconds": round(self.seconds, 3),
            "items_per_s": round(self.items / self.seconds, 1) if self.seconds > 0 else None,
            "failures": self.failures,
        }


def _fail(report: IngestReport, failure: BulkFailure) -> None:
    hint = f" ({BLOCKED_HINT})" if "cluster_block_exception" in failure.reason else ""
    count_failure(report, failure.id, f"{failure.reason}{hint}")


def _sendable(report: IngestReport, items: Iterable[ItemLike], bar: tqdm) -> Iterator[ItemLike]:
    """Items OpenSearch can accept; others are counted as failed here, because one bad
    `_id` would make OpenSearch reject the whole bulk request it travels in."""
    for item in items:
        size = len(item.id.encode("utf-8"))
        if size > MAX_ID_BYTES:
            report.items += 1
            _fail(report, BulkFailure(item.id, 400, f"id is {size} bytes; OpenSearch allows at most {MAX_ID_BYTES}"))
            bar.update(1)
            continue
        yield item


def has_synced_keywords(cluster: Cluster, index: str) -> bool:
    """Whether any document carries keywords a sync wrote (then re-ingest must keep them)."""
    body = {"query": {"exists": {"field": doc_fields.ROUND}}}
    return cluster.call(cluster.client.count, index=index, body=body)["count"] > 0


def merged_document(item: ItemLike, stored: dict | None) -> dict:
    """The item's catalog fields over its stored document's keyword fields.

    The stored title keyword is replaced by the new title's when the title changed;
    a new item gets title-only keywords.
    """
    if not stored or not stored.get(doc_fields.KEYWORDS):
        return item_document(item)
    doc = {**item_document(item), **{k: stored[k] for k in doc_fields.KEYWORD_FIELDS if k in stored}}
    old_title = term(stored.get(doc_fields.TITLE) or "")
    kept = [k for k in stored[doc_fields.KEYWORDS] if k != old_title or old_title == term(item.title)]
    doc[doc_fields.KEYWORDS] = item_keywords(kept, item.title, k_max=None)  # stored sets are already cut
    return doc


class _Writer:
    """Turns items into bulk actions for one mode, counting what needs no write."""

    def __init__(self, cluster: Cluster, index: str, mode: str, chunk_size: int, pipeline: str | None = None) -> None:
        self.cluster, self.index, self.mode, self.chunk_size = cluster, index, mode, chunk_size
        self.pipeline = pipeline
        self.unchanged = 0

    def _action(self, item_id: str, doc: dict) -> dict:
        action = {"_op_type": "index", "_index": self.index, "_id": item_id, "_source": doc}
        if self.pipeline:
            action["pipeline"] = self.pipeline
        return action

    def actions(self, items: Iterable[ItemLike]) -> Iterator[dict]:
        if self.mode == "index":
            yield from (self._action(item.id, item_document(item)) for item in items)
            return
        for batch in batched(items, self.chunk_size):
            found = self.cluster.call(self.cluster.client.mget, index=self.index, body={"ids": [i.id for i in batch]})
            stored = {d["_id"]: d["_source"] for d in found["docs"] if d.get("found")}
            for item in batch:
                doc = merged_document(item, stored.get(item.id))
                if stored.get(item.id) == doc:
                    self.unchanged += 1
                    continue
                yield self._action(item.id, doc)


def ingest_items(
    cluster: Cluster,
    alias: str,
    items: Iterable[ItemLike],
    total: int | None = None,
    chunk_size: int = CHUNK_SIZE,
    progress: bool = True,
    pipeline: str | None = None,
) -> IngestReport:
    """Create the alias if needed, upsert every item, refresh, and count what is there.

    Per-document failures (a mapping conflict, a rejected document) are counted and the
    first few reported; they do not stop the load. An unreachable cluster does.
    With `pipeline` (an ingest pipeline, e.g. `cogr-ingest`) every item is sent as a whole
    `index` write through it, because OpenSearch runs ingest pipelines on index writes only.
    """
    started = time.perf_counter()
    state = create_index(cluster, alias)
    index = alias_target(cluster, alias) or state.index
    mode = "upsert" if pipeline is None and has_synced_keywords(cluster, index) else "index"
    report = IngestReport(alias=alias, index=index, alias_created=state.created, mode=mode)
    writer = _Writer(cluster, index, mode, chunk_size, pipeline)
    with progress_bar(total, f"ingest -> {alias}", "item", progress) as bar:
        def on_chunk(chunk: BulkResult) -> None:
            bar.update(chunk.sent)

        result = bulk_write(cluster, writer.actions(_sendable(report, items, bar)), chunk_size, on_chunk)
    report.items += result.sent + writer.unchanged
    report.created, report.updated = result.created, result.updated + result.noop
    report.unchanged = writer.unchanged
    for failure in result.failures:
        _fail(report, failure)
    cluster.call(cluster.client.indices.refresh, index=index)
    report.documents_in_index = cluster.call(cluster.client.count, index=index)["count"]
    report.seconds = time.perf_counter() - started
    return report
