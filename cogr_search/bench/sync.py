"""`bench sync`: a whole sync of a catalog next to raw `_bulk` of the same documents.

On a throwaway node, the catalog is ingested once; its items get n-gram keywords (no
model needed) and are synced into new versions, while the very documents a sync writes
are also POSTed as raw NDJSON `_bulk` into a fresh index. `sync_docs_per_s` counts the
sync end to end (write block, coverage check, scan, bulk, verify, swap); `sync_ratio`
is it over `raw_bulk_docs_per_s`, the floor for writing those documents at all.
Runs alternate (raw, sync, sync, raw) so neither gets the warm half of the run.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from cogr_search.bench.ingest import Doc, raw_bulk_rate
from cogr_search.bench.node import throwaway_node
from cogr_search.bench.rewards import ngrams
from cogr_search.data import load_dataset
from cogr_search.errors import CogrError
from cogr_search.cluster import documents as fields
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.documents import item_document
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import SyncConfig, prune_versions, sync_keywords
from cogr_search.settings import Settings

ALIAS = "bench-sync"
MODEL = "bench:ngrams"


def run(data: Path, settings: Settings, port: int | None, heap: str, max_items: int | None, config: SyncConfig) -> dict:
    """Start a fresh node, ingest, sync twice and raw-bulk twice; return the figures."""
    dataset = load_dataset(data)
    items = list(dataset.items.values())[:max_items]
    keywords = {item.id: ngrams(item.title, limit=config.k_max) for item in items}
    provenance = {fields.ROUND: 1, fields.MODEL: MODEL, fields.UPDATED_AT: "2026-01-01T00:00:00+00:00"}
    docs: list[Doc] = [(i.id, {**item_document(i, keywords[i.id], config.k_max), **provenance}) for i in items]
    with throwaway_node(port, heap) as info:
        cluster = Cluster(settings, info.url)
        ingest = ingest_items(cluster, ALIAS, items, total=len(items), progress=False)
        if ingest.failed:
            raise CogrError(f"bench sync: {ingest.failed} items failed to ingest ({ingest.failures[0]})")
        raw = [raw_bulk_rate(info.url, cluster, "bench-raw-bulk", docs)]
        syncs = []
        for round_ in (1, 2):
            result = sync_keywords(cluster, ALIAS, keywords, round_, MODEL, config, progress=False)
            if result.documents != len(items):
                raise CogrError(f"bench sync: {result.index} holds {result.documents} of {len(items)} documents")
            syncs.append(result.documents / result.seconds)
            prune_versions(cluster, ALIAS, keep=1)
        raw.append(raw_bulk_rate(info.url, cluster, "bench-raw-bulk", docs))
    return {
        "data": str(data),
        "docs": len(items),
        "chunk_size": config.chunk_size,
        "heap": heap,
        "port": info.url.rsplit(":", 1)[-1],
        "node_start_s": round(info.start_seconds, 2),
        "sync_docs_per_s": round(statistics.mean(syncs), 1),
        "raw_bulk_docs_per_s": round(statistics.mean(raw), 1),
        "sync_ratio": round(statistics.mean(syncs) / statistics.mean(raw), 3),
        "sync_runs": [round(r, 1) for r in syncs],
        "raw_runs": [round(r, 1) for r in raw],
    }
