"""`bench sync`: a whole online sync of a catalog, with an application writing throughout.

On a throwaway node, the catalog is ingested once (`--copies N`: N times, the same items
under new ids, to see what grows with the catalog); its items get n-gram keywords (no
model needed) and are synced into new versions twice, while a writer thread indexes,
overwrites and deletes documents through the alias at `--write-rate` operations a second,
as an application would. Per sync it records `sync_s` (end to end) and `freeze_s` (the
final freeze: writes refused), and from the writer's side the longest time one of its
writes kept being refused (`writer_max_refused_s`). With `--raw`, the very documents a
sync writes are also POSTed as raw NDJSON `_bulk` into a fresh index, before and after
(`sync_ratio` = sync / raw rate, the floor for writing those documents at all).
"""

from __future__ import annotations

import statistics
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from cogr_search.bench.ingest import Doc, raw_bulk_rate
from cogr_search.bench.node import throwaway_node
from cogr_search.bench.rewards import ngrams
from cogr_search.cluster import documents as fields
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.documents import item_document
from cogr_search.cluster.engines import API_ERRORS, status_of
from cogr_search.cluster.indices import versions
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import SyncConfig, prune_versions, sync_keywords
from cogr_search.data import Item, load_dataset
from cogr_search.errors import CogrError
from cogr_search.settings import Settings

ALIAS = "bench-sync"
MODEL = "bench:ngrams"


def copies(items: list[Item], n: int) -> list[Item]:
    """The catalog n times over: copy c > 0 of item `x` is `x~c`, same title and text."""
    return items + [Item(f"{i.id}~{c}", i.title, i.description) for c in range(1, n) for i in items]


class Writer(threading.Thread):
    """An application writing through the alias at a steady rate until stopped.

    Each operation is one of: index a new document, overwrite an existing one, delete
    one (in turn). A write refused by a freeze is retried until it goes through; the
    longest such wait is the application's view of the freeze."""

    def __init__(self, cluster: Cluster, items: list[Item], rate: float, first_op: int = 0) -> None:
        super().__init__(daemon=True)
        self.cluster, self.items, self.interval = cluster, items, 1.0 / rate
        self.first_op = first_op  # a later sync's writer goes on where the last one stopped
        self.stop = threading.Event()
        self.ops = self.refusals = 0
        self.max_refused_s = 0.0

    def _op(self, n: int) -> None:
        client, item = self.cluster.client, self.items[n % len(self.items)]
        if n % 3 == 0:
            client.index(index=ALIAS, id=f"app-{n}", body={"id": f"app-{n}", "title": f"App Item {n}"})
        elif n % 3 == 1:
            client.index(index=ALIAS, id=item.id, body={"id": item.id, "title": item.title, "description": "edited"})
        else:
            client.delete(index=ALIAS, id=self.items[-1 - n // 3].id, ignore=[404])

    def run(self) -> None:
        n = self.first_op
        while not self.stop.wait(self.interval):
            refused_since = None
            while True:
                try:
                    self._op(n)
                    break
                except API_ERRORS as err:
                    if status_of(err) not in (403, 429) or self.stop.is_set():
                        raise
                    self.refusals += 1
                    refused_since = refused_since or time.perf_counter()
                    time.sleep(0.01)  # retry a refused write soon, as an application would
            if refused_since is not None:
                self.max_refused_s = max(self.max_refused_s, time.perf_counter() - refused_since)
            self.ops += 1
            n += 1


def run(data: Path, settings: Settings, port: int | None, heap: str, max_items: int | None, config: SyncConfig,
        n_copies: int = 1, write_rate: float = 20.0, raw: bool = True, nodes: int = 1, warm_up_rounds: int = 4) -> dict:
    """Start a fresh node (or ``nodes``-node cluster, where every index gets one replica),
    ingest, sync twice with a writer running; return the figures."""
    items = copies(list(load_dataset(data).items.values())[:max_items], n_copies)
    keywords = {item.id: ngrams(item.title, limit=config.k_max) for item in items}
    replicas = 1 if nodes > 1 else 0
    with throwaway_node(port, heap, nodes) as info:
        cluster = Cluster(settings, info.url)
        ingest = ingest_items(cluster, ALIAS, items, total=len(items), progress=False)
        if ingest.failed:
            raise CogrError(f"bench sync: {ingest.failed} items failed to ingest ({ingest.failures[0]})")
        if replicas:  # the syncs copy the source's shape, replicas included
            cluster.call(cluster.client.indices.put_settings, index=ingest.index,
                         body={"index": {"number_of_replicas": replicas}})
            cluster.call(cluster.client.cluster.health, index=ingest.index,
                         params={"wait_for_status": "green", "timeout": "300s"}, request_timeout=310)
        docs = _raw_docs(items, keywords, config) if raw else []
        _warm_up(cluster, info.url, items[:WARM_UP_ITEMS], keywords, config, docs[:WARM_UP_ITEMS], replicas,
                 warm_up_rounds)
        raws = [raw_bulk_rate(info.url, cluster, "bench-raw-bulk", docs, replicas)] if raw else []
        syncs: list[dict] = []
        ops = 0
        for round_ in (1, 2):
            writer = Writer(cluster, items, write_rate, first_op=ops) if write_rate > 0 else None
            if writer is not None:
                writer.start()
            try:
                result = sync_keywords(cluster, ALIAS, keywords, round_, MODEL, config, progress=False)
            finally:
                if writer is not None:
                    writer.stop.set()
                    writer.join()
                    ops += writer.ops
            syncs.append({"sync_s": round(result.seconds, 2), "freeze_s": round(result.freeze_s, 3),
                          "docs_per_s": round(result.documents / result.seconds, 1), "caught_up": result.caught_up,
                          "deleted": result.deleted_documents, "writer_ops": writer.ops if writer else 0,
                          "writer_refusals": writer.refusals if writer else 0,
                          "writer_max_refused_s": round(writer.max_refused_s, 3) if writer else 0.0,
                          "phase_s": result.as_dict()["phase_s"]})
            prune_versions(cluster, ALIAS, keep=1)
        if raw:
            raws.append(raw_bulk_rate(info.url, cluster, "bench-raw-bulk", docs, replicas))
    figures = {
        "data": str(data),
        "docs": len(items),
        "copies": n_copies,
        "chunk_size": config.chunk_size,
        "in_flight": config.in_flight,
        "write_rate": write_rate,
        "warm_up_rounds": warm_up_rounds,
        "warm_up_items": min(len(items), WARM_UP_ITEMS),
        "heap": heap,
        "nodes": nodes,
        "replicas": replicas,
        "node_start_s": round(info.start_seconds, 2),
        "sync_s": round(statistics.mean(s["sync_s"] for s in syncs), 2),
        "freeze_s": max(s["freeze_s"] for s in syncs),
        "writer_max_refused_s": max(s["writer_max_refused_s"] for s in syncs),
        "sync_docs_per_s": round(statistics.mean(s["docs_per_s"] for s in syncs), 1),
        "syncs": syncs,
    }
    if raw:
        figures["raw_bulk_docs_per_s"] = round(statistics.mean(raws), 1)
        figures["sync_ratio"] = round(figures["sync_docs_per_s"] / figures["raw_bulk_docs_per_s"], 3)
    return figures


WARM_UP_ITEMS = 60_000
"""The warm-up's slice of the catalog: the whole of Home Depot, a quarter of `--copies 4`."""


def _warm_up(cluster: Cluster, url: str, items: list[Item], keywords: dict[str, list[str]], config: SyncConfig,
             docs: list[Doc], replicas: int, rounds: int) -> None:
    """Both methods, untimed, `rounds` times on a slice, as `bench ingest` warms up first.

    On a node started seconds before, HotSpot is still compiling: measured on 54,667
    items, the first syncs spent 6-9 s of compiler time each (`jstat -compiler`) and the
    first raw loads 3-5 s, against ~1 s once warm, about four rounds in; the ratio of a
    cold run is the JIT's warm-up, which a serving cluster has long since paid."""
    alias = f"{ALIAS}-warm-up"
    ingest_items(cluster, alias, items, total=len(items), progress=False)
    if replicas:
        cluster.call(cluster.client.indices.put_settings, index=f"{alias}--r*",
                     body={"index": {"number_of_replicas": replicas}})
    warm_keywords = {i.id: keywords[i.id] for i in items}
    for round_ in range(1, rounds + 1):
        sync_keywords(cluster, alias, warm_keywords, round_, MODEL, config, progress=False)
        prune_versions(cluster, alias, keep=1)
        if docs:
            raw_bulk_rate(url, cluster, "bench-warm-up", docs, replicas)
    names = [v.name for v in versions(cluster, alias)] + (["bench-warm-up"] if docs and rounds else [])
    cluster.call(cluster.client.indices.delete, index=",".join(names))


def _raw_docs(items: list[Item], keywords: dict[str, list[str]], config: SyncConfig) -> list[Doc]:
    provenance = fields.provenance(1, MODEL, datetime(2026, 1, 1, tzinfo=timezone.utc))
    return [(i.id, {**item_document(i, keywords[i.id], config.k_max), **provenance}) for i in items]
