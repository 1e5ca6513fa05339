"""A smaller real data set cut from a big one: N seeded queries and every item judged
for them, written in BEIR layout.

Why: a CPU run cannot generate keywords for 54,667 Home Depot products, but a subset
whose catalog is exactly the judged items of its queries keeps the real queries, the
real titles and the real labels, and lets BM25 and CoGR be compared on the same,
complete catalog (every relevant item of every query is in it). The subset says where
it came from in the `description` of its `cogr-dataset.json`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.data.model import Dataset
from cogr_search.errors import InputError


def judged_subset(dataset: Dataset, n_queries: int, seed: int = 0) -> Dataset:
    """`n_queries` queries with a relevant item (seeded sample) and the items judged for them."""
    candidates = sorted(dataset.relevant())
    if n_queries < 1:
        raise InputError(f"--queries {n_queries}: must be at least 1")
    if n_queries > len(candidates):
        raise InputError(f"{dataset.path}: --queries {n_queries}, but only {len(candidates)} queries have a relevant item")
    chosen = sorted(random.Random(seed).sample(candidates, n_queries))
    item_ids = sorted({i for q in chosen for i in dataset.labels.get(q, {}) if i in dataset.items})
    return _restricted(dataset, item_ids, chosen, name=f"{dataset.name}-q{n_queries}-s{seed}")


def catalog_subset(dataset: Dataset, item_ids: Sequence[str], name: str) -> Dataset:
    """Only the items `item_ids` (a capped run's catalog), with every query and the labels
    of those items: a loadable folder to ingest, so BM25 searches the catalog the run's
    keywords index. Score it with the source's labels (`eval --data SOURCE --run RUN`):
    a relevant item outside the catalog then still counts in recall, as training's shadow
    metrics count it (`QueryView.build`); this folder's labels would drop it."""
    missing = [i for i in item_ids if i not in dataset.items]
    if missing:
        raise InputError(f"{dataset.path}: {len(missing)} catalog item id(s) are not items of it (e.g. {missing[0]!r})")
    return _restricted(dataset, item_ids, list(dataset.queries), name=name)


def _restricted(dataset: Dataset, item_ids: Sequence[str], query_ids: Sequence[str], name: str) -> Dataset:
    """`dataset` cut to `item_ids` and `query_ids`, each label kept where both ends are kept:
    a written qrels line then always names an item of the written corpus."""
    keep = set(item_ids)
    return Dataset(
        items={i: dataset.items[i] for i in item_ids},
        queries={q: dataset.queries[q] for q in query_ids},
        labels={q: {i: s for i, s in dataset.labels[q].items() if i in keep} for q in query_ids if q in dataset.labels},
        relevance_threshold=dataset.relevance_threshold,
        name=name,
        path=dataset.path,
        layout="beir",
        threshold_source=dataset.threshold_source,
    )


def write_beir(dataset: Dataset, out: Path, description: str = "") -> None:
    """corpus.jsonl, queries.jsonl, qrels.tsv and cogr-dataset.json, each written atomically."""
    with atomic_open(out / "corpus.jsonl") as f:
        for item in dataset.items.values():
            f.write(json.dumps({"_id": item.id, "title": item.title, "text": item.description}, ensure_ascii=False) + "\n")
    with atomic_open(out / "queries.jsonl") as f:
        for query in dataset.queries.values():
            f.write(json.dumps({"_id": query.id, "text": query.text}, ensure_ascii=False) + "\n")
    with atomic_open(out / "qrels.tsv") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for query_id, graded in dataset.labels.items():
            for item_id, score in sorted(graded.items()):
                f.write(f"{query_id}\t{item_id}\t{score:g}\n")
    spec = {"name": dataset.name, "relevance_threshold": dataset.relevance_threshold, "description": description}
    with atomic_open(out / "cogr-dataset.json") as f:
        f.write(json.dumps(spec, indent=2, sort_keys=True) + "\n")
