"""The one bulk loop and the one document scan, both behind the client's retry policy.

Ingest, sync and the benchmarks write through `bulk_write`: it sends NDJSON `_bulk`
requests through `Cluster.call` (so connection errors, timeouts, 429 and 503 are
retried like every other call), resends the items the cluster was too busy to take
(per-item 429) with the same backoff, and returns what the cluster rejected as data,
one `BulkFailure` (id + reason) per document, the way opensearch-py's helpers report
with `raise_on_error=False`. Callers decide what a failure means: ingest reports and
goes on, sync stops before its alias swap.

`scan` reads every document of an index page by page with `search_after` on the item id.
Unlike a scroll, each page request is idempotent, so a page retried after a lost
response is the same page, not the next one.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from contextlib import closing
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol, TypeVar

from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster import json_codec
from cogr_search.cluster.client import Cluster

CHUNK_SIZE = 500
MAX_CHUNK_BYTES = 16 * 1024 * 1024
PAGE_SIZE = 2000
BUSY = 429
_FILTER_PATH = "errors,items.*._id,items.*.status,items.*.result,items.*.error"
_SCAN_FILTER = "hits.hits._id,hits.hits._source,hits.hits.sort"
"""What a scan reads of each hit: less for the node to write and for the client to parse."""


@dataclass(frozen=True)
class BulkFailure:
    """One document the cluster did not write: its id, HTTP status and the reason."""

    id: str
    status: int
    reason: str

    def __str__(self) -> str:
        return f"{self.id[:80]!r}: {self.reason}"


@dataclass
class BulkResult:
    """Per-outcome counts and every failure, as data."""

    created: int = 0
    updated: int = 0
    noop: int = 0
    deleted: int = 0
    failures: list[BulkFailure] = field(default_factory=list)

    @property
    def written(self) -> int:
        return self.created + self.updated + self.noop + self.deleted

    @property
    def sent(self) -> int:
        return self.written + len(self.failures)

    def add(self, other: "BulkResult") -> None:
        self.created += other.created
        self.updated += other.updated
        self.noop += other.noop
        self.deleted += other.deleted
        self.failures.extend(other.failures)


Lines = tuple[str, bytes, bytes | None]
"""One action in a `_bulk` body: its id, the header line and the body line (none for deletes)."""


def _lines(action: dict) -> Lines:
    """(id, header line, body line) of one opensearch-py-style action dict."""
    op = action.get("_op_type", "index")
    header = {"_index": action["_index"], "_id": action["_id"]}
    if action.get("pipeline"):  # an ingest pipeline for this write (index ops only)
        header["pipeline"] = action["pipeline"]
    if op == "delete":
        body = None
    elif op == "update":
        body = {k: action[k] for k in ("doc", "doc_as_upsert", "upsert", "script") if k in action}
    else:
        body = action["_source"]
    return str(action["_id"]), json_codec.dumps({op: header}), None if body is None else json_codec.dumps(body)


T = TypeVar("T")
MAX_REPORTED_FAILURES = 5


class FailureReport(Protocol):
    """A job's report that counts failed items and keeps the first few reasons."""

    failed: int
    failures: list[str]


def count_failure(report: FailureReport, item_id: str, reason: str) -> None:
    """Count one failed item; keep its one-line reason among the first few (ingest, enrich)."""
    report.failed += 1
    if len(report.failures) < MAX_REPORTED_FAILURES:
        report.failures.append(f"{item_id[:80]}: {reason}")


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to `size` consecutive items (itertools.batched, from Python 3.12 on)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _chunks(actions: Iterable[dict], chunk_size: int) -> Iterator[list[Lines]]:
    chunk: list[Lines] = []
    size = 0
    for action in actions:
        lines = _lines(action)
        line_bytes = len(lines[1]) + (len(lines[2]) if lines[2] else 0) + 2
        if chunk and (len(chunk) >= chunk_size or size + line_bytes > MAX_CHUNK_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(lines)
        size += line_bytes
    if chunk:
        yield chunk


_DONE = object()


def _prefetched(chunks: Iterator[T], depth: int = 2) -> Iterator[T]:
    """`chunks`, built ahead in a background thread while the previous `_bulk` is in flight.

    Building documents (scanning the source, normalizing keywords, JSON) is client CPU;
    indexing is the cluster's: overlapping them is what brings a sync close to raw
    `_bulk` speed. An exception while building is re-raised here, in the caller.
    """
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def build() -> None:
        try:
            for chunk in chunks:
                while not stop.is_set():
                    try:
                        ready.put(chunk, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ready.put(_DONE)
        except BaseException as err:  # handed to the consumer, raised there
            ready.put(err)

    worker = threading.Thread(target=build, name="bulk-prefetch", daemon=True)
    worker.start()
    try:
        while (item := ready.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join(timeout=5)


def _payload(chunk: list[Lines]) -> bytes:
    parts: list[bytes] = []
    for _id, header, body in chunk:
        parts.append(header)
        if body is not None:
            parts.append(body)
    return b"\n".join(parts) + b"\n"


def _reason(error: object) -> str:
    if not isinstance(error, dict):
        return str(error)
    reason = f"{error.get('type', 'error')}: {error.get('reason', '')}"
    cause = error.get("caused_by")
    if isinstance(cause, dict) and cause.get("reason"):
        reason += f" ({cause.get('reason')})"
    return reason


def _send(
    cluster: Cluster, chunk: list[Lines], payload: bytes | None = None
) -> tuple[BulkResult, list[Lines]]:
    """One `_bulk` request: its outcome, and the items to resend because the cluster was busy."""
    body = payload if payload is not None else _payload(chunk)
    response = cluster.call(cluster.client.bulk, body=body, filter_path=_FILTER_PATH)
    result = BulkResult()
    busy: list[Lines] = []
    for lines, item in zip(chunk, response.get("items", [])):
        outcome = next(iter(item.values()))
        status = int(outcome.get("status", 500))
        if status < 300:
            kind = outcome.get("result")
            if kind == "created":
                result.created += 1
            elif kind == "noop":
                result.noop += 1
            elif kind in ("deleted", "not_found"):
                result.deleted += 1
            else:
                result.updated += 1
        elif status == BUSY:
            busy.append(lines)
        else:
            result.failures.append(BulkFailure(lines[0], status, _reason(outcome.get("error"))))
    return result, busy


def _send_retrying(cluster: Cluster, chunk: list[Lines], payload: bytes) -> BulkResult:
    """One chunk written: sent, and what the cluster was too busy for resent with backoff."""
    result, busy = _send(cluster, chunk, payload)
    attempt = 0
    while busy and attempt < cluster.settings.cluster_retries:
        attempt += 1
        time.sleep(cluster.backoff_s(attempt))  # back off before resending, as `call` does
        retried, busy = _send(cluster, busy)
        result.add(retried)
    result.failures.extend(BulkFailure(lines[0], BUSY, "rejected: cluster too busy after retries") for lines in busy)
    return result


def bulk_write(
    cluster: Cluster,
    actions: Iterable[dict],
    chunk_size: int = CHUNK_SIZE,
    on_chunk: Callable[[BulkResult], None] | None = None,
    in_flight: int = 1,
) -> BulkResult:
    """Write `actions` (opensearch-py action dicts) in `_bulk` chunks; failures come back as data.

    `in_flight` requests are sent at once: a shard indexes each request on one thread,
    so a single stream leaves the node's other cores idle. Only for actions whose order
    does not matter (each id at most once, as in a sync's pass): chunks may complete in
    any order. `on_chunk` sees each chunk's result as it completes, in this thread
    (progress bars, early stops). A cluster that stays unreachable raises
    `ClusterUnreachable` from `Cluster.call`.
    """
    total = BulkResult()

    def collect(done: Iterable[Future]) -> None:
        for future in done:
            result = future.result()
            total.add(result)
            if on_chunk is not None:
                on_chunk(result)

    chunks = _prefetched((chunk, _payload(chunk)) for chunk in _chunks(actions, chunk_size))
    with closing(chunks), ThreadPoolExecutor(in_flight, thread_name_prefix="bulk-send") as pool:
        pending: set[Future] = set()
        for chunk, payload in chunks:
            if len(pending) >= in_flight:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                collect(done)
            pending.add(pool.submit(_send_retrying, cluster, chunk, payload))
        collect(as_completed(pending))
    return total


def scan(
    cluster: Cluster,
    index: str,
    query: dict | None = None,
    source: list[str] | bool | dict = True,
    page_size: int = PAGE_SIZE,
    preference: str | None = None,
) -> Iterator[list[dict]]:
    """Every matching document of `index` as pages of hits, in item id order.

    Each page is one idempotent search (`search_after` the last id), retried by the
    client's policy. Pages reflect the index as it is when each is read: callers that
    need one consistent view block writes first (sync does). The sort is on the `id`
    keyword field every cogr-search document carries (equal to `_id`), from doc values:
    sorting on `_id` itself needs fielddata, which Elasticsearch 8 disables by default.
    """
    after: list | None = None
    while True:
        body: dict = {"size": page_size, "query": query or {"match_all": {}}, "sort": [{doc_fields.ID: "asc"}],
                      "_source": source, "track_total_hits": False}
        if after is not None:
            body["search_after"] = after
        params = {"preference": preference} if preference else {}
        found = cluster.call(cluster.client.search, index=index, body=body, filter_path=_SCAN_FILTER, **params)
        hits = found.get("hits", {}).get("hits", [])
        if not hits:
            return
        yield hits
        if len(hits) < page_size:
            return
        after = hits[-1]["sort"]
