"""`bench ingest`: how long the local node takes to start, and bulk indexing rates.

Two ways of sending the same documents to the same node in one run, so their ratio is
meaningful on a noisy machine: opensearch-py's `helpers.streaming_bulk` (what ingest
uses) and hand-built NDJSON `_bulk` bodies POSTed over one keep-alive HTTP connection
(the floor that any client library adds its overhead to).
"""

from __future__ import annotations

import http.client
import json
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from opensearchpy import helpers

from cogr_search.data import Item, load_dataset
from cogr_search.errors import CogrError
from cogr_search.opensearch import local_node
from cogr_search.opensearch.client import Cluster
from cogr_search.opensearch.documents import index_actions, item_document
from cogr_search.opensearch.mappings import index_template
from cogr_search.settings import Settings

CHUNK = 500


def _fresh_index(cluster: Cluster, name: str) -> None:
    """An index with the item mapping, refresh off while loading (as bulk loaders do)."""
    cluster.client.indices.delete(index=name, ignore=[404])
    body = index_template("bench")["template"]
    body["settings"]["index"]["refresh_interval"] = "-1"
    cluster.call(cluster.client.indices.create, index=name, body=body)


def _finish(cluster: Cluster, name: str, expected: int) -> None:
    cluster.call(cluster.client.indices.refresh, index=name)
    count = cluster.call(cluster.client.count, index=name)["count"]
    if count != expected:
        raise CogrError(f"bench index {name}: expected {expected} documents, found {count}")


def streaming_bulk_rate(cluster: Cluster, name: str, items: Sequence[Item]) -> float:
    """Documents per second through `helpers.streaming_bulk`."""
    _fresh_index(cluster, name)
    start = time.perf_counter()
    for ok, info in helpers.streaming_bulk(cluster.client, index_actions(name, items), chunk_size=CHUNK):
        if not ok:
            raise CogrError(f"bulk indexing failed: {info}")
    elapsed = time.perf_counter() - start
    _finish(cluster, name, len(items))
    return len(items) / elapsed


def _ndjson_chunks(name: str, items: Sequence[Item]) -> Iterator[bytes]:
    for i in range(0, len(items), CHUNK):
        lines = []
        for item in items[i : i + CHUNK]:
            lines.append(json.dumps({"index": {"_index": name, "_id": item.id}}))
            lines.append(json.dumps(item_document(item)))
        yield ("\n".join(lines) + "\n").encode()


def raw_bulk_rate(url: str, cluster: Cluster, name: str, items: Sequence[Item]) -> float:
    """Documents per second for raw `_bulk` POSTs over one keep-alive connection."""
    _fresh_index(cluster, name)
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    start = time.perf_counter()
    for body in _ndjson_chunks(name, items):
        conn.request("POST", "/_bulk", body=body, headers={"Content-Type": "application/x-ndjson"})
        response = conn.getresponse()
        payload = json.loads(response.read())
        if response.status != 200 or payload.get("errors"):
            raise CogrError(f"raw _bulk failed with HTTP {response.status}")
    elapsed = time.perf_counter() - start
    conn.close()
    _finish(cluster, name, len(items))
    return len(items) / elapsed


def run(data: Path, settings: Settings, port: int, heap: str, max_items: int | None) -> dict:
    """Start a fresh node, index the catalog both ways, stop the node; return the figures."""
    dataset = load_dataset(data)
    items = list(dataset.items.values())[:max_items]
    with tempfile.TemporaryDirectory(prefix="cogr-bench-node-") as home:
        local_node.ensure_built()
        info = local_node.start(Path(home), port=port, heap=heap)
        try:
            cluster = Cluster(settings, info.url)
            # Warm the JVM first, then alternate (A B B A) so neither method gets the warm half.
            streaming_bulk_rate(cluster, "bench-warmup", items[:5000])
            raw = [raw_bulk_rate(info.url, cluster, "bench-raw-bulk", items)]
            streaming = [streaming_bulk_rate(cluster, "bench-streaming-bulk", items) for _ in range(2)]
            raw.append(raw_bulk_rate(info.url, cluster, "bench-raw-bulk", items))
        finally:
            local_node.stop(Path(home))
    return {
        "data": str(data),
        "docs": len(items),
        "chunk_size": CHUNK,
        "heap": heap,
        "node_start_s": round(info.start_seconds, 2),
        "streaming_bulk_docs_per_s": round(statistics.mean(streaming), 1),
        "raw_bulk_docs_per_s": round(statistics.mean(raw), 1),
        "streaming_vs_raw": round(statistics.mean(streaming) / statistics.mean(raw), 3),
        "runs_per_method": 2,
    }
