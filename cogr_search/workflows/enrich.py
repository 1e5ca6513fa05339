"""Client-side enrichment at ingest: item keywords generated here, written with bulk updates.

`cogr-search ingest DATA --index NAME --enrich --run RUN` loads the catalog as usual, then
calls this: items are taken in batches, those whose document already carries the
expander's `cogr_model` are skipped (a rerun after a crash, or a re-ingest, generates
nothing twice), the rest go to the item generator in one call per batch, and their
`cogr_keywords` (S_i ∪ {normalize(title)}, as sync writes them) and provenance are
written with partial-document bulk updates, batch by batch, so a crash loses at most
the batch in progress.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cogr_search.progress import progress_bar
from cogr_search.errors import CogrError
from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster.bulk import batched, bulk_write, count_failure
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.documents import ItemLike
from cogr_search.cluster.indices import alias_target
from cogr_search.serve.expander import Expander
from cogr_search.cluster.suggest import missing_advice
from cogr_search.serve.expander import open_expander



@dataclass
class EnrichReport:
    """Counts for the ingest summary (and `--json`)."""

    index: str
    model: str
    round: int
    items: int = 0
    skipped: int = 0
    generated: int = 0
    written: int = 0
    failed: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {**asdict(self), "seconds": round(self.seconds, 3)}

    def summary(self) -> str:
        return (
            f"enriched {self.index} with {self.model}: {self.generated} items generated, {self.written} written, "
            f"{self.skipped} already current, {self.failed} failed; {self.seconds:.1f} s"
        )


def _current_models(cluster: Cluster, index: str, ids: Sequence[str]) -> dict[str, str | None]:
    """`cogr_model` of each existing document among `ids`."""
    response = cluster.call(cluster.client.mget, index=index, body={"ids": list(ids)}, _source_includes=doc_fields.MODEL)
    return {doc["_id"]: doc.get("_source", {}).get(doc_fields.MODEL) for doc in response["docs"] if doc.get("found")}


def _update_actions(index: str, items: Sequence[ItemLike], keywords: Sequence[list[str]], provenance: dict,
                    k_max: int) -> list[dict]:
    return [
        {"_op_type": "update", "_index": index, "_id": item.id,
         "doc": {doc_fields.KEYWORDS: doc_fields.item_keywords(kws, item.title, k_max), **provenance}}
        for item, kws in zip(items, keywords)
    ]


def enrich_index(
    cluster: Cluster,
    alias: str,
    items: Iterable[ItemLike],
    expander: Expander,
    *,
    total: int | None = None,
    batch_size: int = 32,
    progress: bool = True,
) -> EnrichReport:
    """Fill `cogr_keywords` and provenance of the alias's documents for `items`."""
    started = time.perf_counter()
    index = alias_target(cluster, alias)
    if index is None:
        raise CogrError(f"alias {alias!r} does not exist: {missing_advice(cluster.client, alias, 'ingest the catalog first')}")
    report = EnrichReport(index=index, model=expander.model, round=expander.round)
    provenance = doc_fields.provenance(expander.round, expander.model)
    bar = progress_bar(total, f"enrich -> {alias}", "item", progress)
    try:
        for batch in batched(items, batch_size):
            report.items += len(batch)
            current = _current_models(cluster, index, [i.id for i in batch])
            todo = [i for i in batch if i.id in current and current[i.id] != expander.model]
            report.skipped += sum(1 for i in batch if current.get(i.id) == expander.model)
            for item in batch:
                if item.id not in current:
                    count_failure(report, item.id, "no such document in the index (not ingested)")
            if todo:
                keywords = expander.expand_items(todo)
                report.generated += len(todo)
                _write(cluster, _update_actions(index, todo, keywords, provenance, expander.k_max), report)
            bar.update(len(batch))
    finally:
        bar.close()
    cluster.call(cluster.client.indices.refresh, index=index)
    report.seconds = time.perf_counter() - started
    return report


def _write(cluster: Cluster, actions: list[dict], report: EnrichReport) -> None:
    """The shared bulk loop (retries included); rejected documents are counted by id."""
    result = bulk_write(cluster, actions)
    report.written += result.written
    for failure in result.failures:
        count_failure(report, failure.id, failure.reason)


def enrich_from_run(
    cluster: Cluster,
    alias: str,
    items: Iterable[ItemLike],
    run: str,
    round_: int | None = None,
    *,
    runs_dir: Path | None = None,
    total: int | None = None,
    progress: bool = True,
    expander: str = "auto",
) -> EnrichReport:
    """`enrich_index` with `run`'s item expander (of `round_`, default its latest): its
    item student when the round has one (`expander="auto"`), else its item generator."""
    chosen = open_expander(run, round_, expander=expander, runs_dir=runs_dir, sides=("item",))
    try:
        return enrich_index(cluster, alias, items, chosen, total=total, batch_size=chosen.batch_size,
                            progress=progress)
    finally:
        chosen.close()
