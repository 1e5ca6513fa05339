"""`bench ingest`: how long the local node takes to start, and bulk indexing rates.

Two ways of sending the same documents to the same node in one run, so their ratio is
meaningful on a noisy machine: the project's bulk loop (`opensearch.bulk.bulk_write`,
what ingest and sync use) and hand-built NDJSON `_bulk` bodies POSTed over one
keep-alive HTTP connection (the floor that any client library adds its overhead to).

With `--cluster-url` (repeatable) the same documents go to existing clusters instead of
a throwaway local node, one after the other in one run: OpenSearch and Elasticsearch
side by side, each with its engine's client behind the same bulk loop.

With `enrich` (an ingest pipeline's name, `bench ingest --enrich`), the service-free
route instead (docs/students.md): raw `_bulk` of the same bodies with and without the
pipeline whose `cogr_keywords` runs the run's item student inside the node, in the
order A B B A; every enriched document must carry keywords, or the bench stops (a
pipeline that failed its documents would otherwise look fast).
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote, urlsplit

from cogr_search.bench.node import throwaway_node
from cogr_search.data import load_dataset
from cogr_search.errors import CogrError
from cogr_search.cluster import json_codec
from cogr_search.cluster.bulk import bulk_write
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.documents import KEYWORDS
from cogr_search.cluster.engines import NOT_FOUND
from cogr_search.connect import connect
from cogr_search.cluster.documents import item_document
from cogr_search.cluster.mappings import index_body
from cogr_search.settings import Settings

CHUNK = 500
Doc = tuple[str, dict]


def fresh_index(cluster: Cluster, name: str, replicas: int | None = None) -> None:
    """An index with the item mapping (``replicas``: the mapping file's count unless given),
    refresh off while loading (as bulk loaders do)."""
    cluster.call(cluster.client.indices.delete, index=name, ignore_unavailable=True)
    body = index_body(None, replicas, templates=cluster.settings.mappings_dir, refresh_interval="-1")
    cluster.call(cluster.client.indices.create, index=name, body=body)


def finish(cluster: Cluster, name: str, expected: int) -> None:
    """Refresh and count: part of the timed work, since documents count once searchable
    (a sync must refresh to verify its copy, so the comparison is like for like)."""
    cluster.call(cluster.client.indices.refresh, index=name)
    count = cluster.call(cluster.client.count, index=name)["count"]
    if count != expected:
        raise CogrError(f"bench index {name}: expected {expected} documents, found {count}")


def bulk_write_rate(cluster: Cluster, name: str, docs: Sequence[Doc]) -> float:
    """Documents per second through the project's bulk loop."""
    fresh_index(cluster, name)
    start = time.perf_counter()
    actions = ({"_op_type": "index", "_index": name, "_id": doc_id, "_source": doc} for doc_id, doc in docs)
    result = bulk_write(cluster, actions, chunk_size=CHUNK)
    if result.failures:
        raise CogrError(f"bulk indexing failed: {result.failures[0]}")
    finish(cluster, name, len(docs))
    return len(docs) / (time.perf_counter() - start)


def _ndjson_chunks(name: str, docs: Sequence[Doc]) -> Iterator[bytes]:
    """The bodies, written with the project's JSON encoder (what the bulk loop uses), so
    neither side of a comparison gets a faster one."""
    for i in range(0, len(docs), CHUNK):
        lines = []
        for doc_id, doc in docs[i : i + CHUNK]:
            lines.append(json_codec.dumps({"index": {"_index": name, "_id": doc_id}}))
            lines.append(json_codec.dumps(doc))
        yield b"\n".join(lines) + b"\n"


def raw_bulk_rate(url: str, cluster: Cluster, name: str, docs: Sequence[Doc], replicas: int | None = None,
                  pipeline: str | None = None) -> float:
    """Documents per second for raw `_bulk` POSTs over one keep-alive connection (through
    the ingest `pipeline` when given)."""
    fresh_index(cluster, name, replicas)
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    path = "/_bulk" + (f"?pipeline={quote(pipeline)}" if pipeline else "")
    start = time.perf_counter()
    for body in _ndjson_chunks(name, docs):
        conn.request("POST", path, body=body, headers={"Content-Type": "application/x-ndjson"})
        response = conn.getresponse()
        payload = json.loads(response.read())
        if response.status != 200 or payload.get("errors"):
            reason = next((v["error"] for item in payload.get("items", []) for v in item.values() if v.get("error")),
                          payload.get("error"))
            raise CogrError(f"raw _bulk failed with HTTP {response.status}: {json.dumps(reason)[:300]}")
    conn.close()
    finish(cluster, name, len(docs))
    return len(docs) / (time.perf_counter() - start)


BENCH_INDICES = ("bench-warmup", "bench-raw-bulk", "bench-bulk-write")
ENRICH_INDICES = ("bench-plain-bulk", "bench-enriched-bulk")


def measure(cluster: Cluster, docs: Sequence[Doc]) -> dict:
    """Both rates on one cluster: warm-up, then alternating (A B B A) so neither method
    gets the warm half; the bench indices are deleted afterwards."""
    bulk_write_rate(cluster, "bench-warmup", docs[:5000])
    raw = [raw_bulk_rate(cluster.url, cluster, "bench-raw-bulk", docs)]
    loop = [bulk_write_rate(cluster, "bench-bulk-write", docs) for _ in range(2)]
    raw.append(raw_bulk_rate(cluster.url, cluster, "bench-raw-bulk", docs))
    cluster.call(cluster.client.indices.delete, index=",".join(BENCH_INDICES), ignore_unavailable=True)
    return {
        "engine": cluster.engine.description,
        "url": cluster.url,
        "bulk_write_docs_per_s": round(statistics.mean(loop), 1),
        "raw_bulk_docs_per_s": round(statistics.mean(raw), 1),
        "bulk_write_vs_raw": round(statistics.mean(loop) / statistics.mean(raw), 3),
    }


def _with_keywords(cluster: Cluster, index: str) -> int:
    query = {"query": {"exists": {"field": KEYWORDS}}}
    return cluster.call(cluster.client.count, index=index, body=query)["count"]


def enrich_rate(cluster: Cluster, docs: Sequence[Doc], pipeline: str) -> dict:
    """Items per second through the ingest pipeline next to raw `_bulk` of the same bodies."""
    try:
        cluster.call(cluster.client.ingest.get_pipeline, id=pipeline)
    except NOT_FOUND:
        raise CogrError(f"no ingest pipeline {pipeline!r} on the cluster "
                        "(install it with `cogr-search index create --pipelines --run RUN`)") from None
    plain_name, enriched_name = ENRICH_INDICES
    started = time.perf_counter()
    raw_bulk_rate(cluster.url, cluster, enriched_name, docs[:500], pipeline=pipeline)  # loads the student
    first_batch_s = time.perf_counter() - started
    plain, enriched = [raw_bulk_rate(cluster.url, cluster, plain_name, docs)], []
    for _ in range(2):
        enriched.append(raw_bulk_rate(cluster.url, cluster, enriched_name, docs, pipeline=pipeline))
        carrying = _with_keywords(cluster, enriched_name)
        if carrying != len(docs):
            raise CogrError(f"pipeline {pipeline!r}: {carrying} of {len(docs)} documents carry {KEYWORDS}")
    plain.append(raw_bulk_rate(cluster.url, cluster, plain_name, docs))
    cluster.call(cluster.client.indices.delete, index=",".join(ENRICH_INDICES), ignore_unavailable=True)
    return {
        "pipeline": pipeline,
        "plain_docs_per_s": round(statistics.mean(plain), 1),
        "enriched_docs_per_s": round(statistics.mean(enriched), 1),
        "enriched_vs_plain": round(statistics.mean(enriched) / statistics.mean(plain), 3),
        "enriched_with_keywords": len(docs),
        "first_batch_s": round(first_batch_s, 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def run(
    data: Path, settings: Settings, port: int | None, heap: str, max_items: int | None, urls: Sequence[str] = (),
    enrich: str | None = None,
) -> dict:
    """Index the catalog both ways on a fresh local node (or on each of `urls`, in
    turn); with `enrich`, with and without that ingest pipeline on each of `urls`
    (the local node when none is given); return the figures."""
    dataset = load_dataset(data)
    docs = [(item.id, item_document(item)) for item in list(dataset.items.values())[:max_items]]
    common = {"data": str(data), "docs": len(docs), "chunk_size": CHUNK, "runs_per_method": 2}
    if enrich is not None:
        clusters = [connect(settings, url.rstrip("/")) for url in urls] or [connect(settings)]
        return {**common, "cores": os.cpu_count(),
                "clusters": [{"url": c.url, **enrich_rate(c, docs, enrich)} for c in clusters]}
    if urls:
        clusters = [measure(connect(settings, url.rstrip("/")), docs) for url in urls]
        result: dict = {**common, "clusters": clusters}
        if len(clusters) > 1:
            base = clusters[0]["bulk_write_docs_per_s"]
            result["bulk_write_vs_first"] = [round(c["bulk_write_docs_per_s"] / base, 3) for c in clusters]
        return result
    with throwaway_node(port, heap) as info:
        figures = measure(Cluster(settings, info.url), docs)
    return {
        **common,
        "heap": heap,
        "port": info.url.rsplit(":", 1)[-1],
        "node_start_s": round(info.start_seconds, 2),
        **figures,
    }
