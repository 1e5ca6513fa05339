"""Bulk-loading a catalog's items into the index behind an alias.

Resumable by construction: the document `_id` is the item id, so a rerun after a crash
(or on an updated catalog) sends the same documents again and converges. Two modes:
- `index` while no document of the index carries keywords yet (a first load, or a
  resumed one): plain `index` actions, the fastest bulk path;
- `upsert` once a sync has written keywords: `update` with `doc_as_upsert`, which touches
  only `id`, `title` and `description`, so `cogr_keywords` and provenance survive a
  re-ingest, and unchanged documents are no-ops.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from opensearchpy import exceptions as os_exc
from opensearchpy import helpers
from tqdm import tqdm

from cogr_search.errors import CogrError
from cogr_search.opensearch.client import Cluster, ClusterUnreachable
from cogr_search.opensearch.documents import ItemLike, item_document
from cogr_search.opensearch.indices import alias_target, create_index

CHUNK_SIZE = 500
MAX_REPORTED_FAILURES = 5
MAX_ID_BYTES = 512  # OpenSearch rejects the whole _bulk request over a longer _id


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


def index_actions(index: str, items: Iterable[ItemLike]) -> Iterator[dict]:
    """Whole-document writes keyed by item id: a rerun overwrites with the same content."""
    for item in items:
        yield {"_op_type": "index", "_index": index, "_id": item.id, "_source": item_document(item)}


def upsert_actions(index: str, items: Iterable[ItemLike]) -> Iterator[dict]:
    """Idempotent bulk actions: a rerun converges and leaves keyword fields alone."""
    for item in items:
        yield {
            "_op_type": "update",
            "_index": index,
            "_id": item.id,
            "doc": item_document(item),
            "doc_as_upsert": True,
        }


def _fail(report: IngestReport, item_id: str, reason: str) -> None:
    report.failed += 1
    if len(report.failures) < MAX_REPORTED_FAILURES:
        report.failures.append(f"{item_id[:80]}: {reason}")


def _sendable(report: IngestReport, items: Iterable[ItemLike], bar: tqdm) -> Iterator[ItemLike]:
    """Items OpenSearch can accept; others are counted as failed here, because one bad
    `_id` would make OpenSearch reject the whole bulk request it travels in."""
    for item in items:
        size = len(item.id.encode("utf-8"))
        if size > MAX_ID_BYTES:
            report.items += 1
            _fail(report, item.id, f"id is {size} bytes; OpenSearch allows at most {MAX_ID_BYTES}")
            bar.update(1)
            continue
        yield item


def has_keywords(cluster: Cluster, index: str) -> bool:
    """Whether any document already carries synced keywords (then upserts must keep them)."""
    body = {"query": {"exists": {"field": "cogr_keywords"}}}
    return cluster.call(cluster.client.count, index=index, body=body)["count"] > 0


def _record(report: IngestReport, ok: bool, info: dict) -> None:
    outcome = next(iter(info.values()), {}) if info else {}
    if ok:
        result = outcome.get("result")
        if result == "created":
            report.created += 1
        elif result == "noop":
            report.unchanged += 1
        else:
            report.updated += 1
        return
    error = outcome.get("error", {})
    reason = error.get("reason", error) if isinstance(error, dict) else error
    _fail(report, str(outcome.get("_id", "?")), str(reason))


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
    mode = "upsert" if pipeline is None and has_keywords(cluster, index) else "index"
    report = IngestReport(alias=alias, index=index, alias_created=state.created, mode=mode)
    make_actions = upsert_actions if mode == "upsert" else index_actions
    bar = tqdm(total=total, desc=f"ingest -> {alias}", unit="item", disable=not progress, leave=False)
    stream = helpers.streaming_bulk(
        cluster.client,
        make_actions(index, _sendable(report, items, bar)),
        chunk_size=chunk_size,
        max_retries=3,
        initial_backoff=1,
        raise_on_error=False,
        raise_on_exception=True,
        **({"pipeline": pipeline} if pipeline else {}),
    )
    try:
        for ok, info in stream:
            report.items += 1
            _record(report, ok, info)
            bar.update(1)
    except (os_exc.ConnectionError, os_exc.ConnectionTimeout) as err:
        raise ClusterUnreachable(
            f"OpenSearch at {cluster.url} stopped answering after {report.items} items ({err.__class__.__name__}); "
            "rerun the same command to resume"
        ) from err
    except os_exc.TransportError as err:
        raise CogrError(f"bulk load into {index} failed: {err.status_code} {err.error}") from err
    finally:
        bar.close()
    cluster.call(cluster.client.indices.refresh, index=index)
    report.documents_in_index = cluster.call(cluster.client.count, index=index)["count"]
    report.seconds = time.perf_counter() - started
    return report
