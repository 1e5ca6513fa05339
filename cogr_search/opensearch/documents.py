"""The shape of an item document in OpenSearch (DESIGN.md section 3).

Ingest, sync and the benchmarks all build documents here, so the mapping in mappings/
and the documents written to it cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol


class ItemLike(Protocol):
    id: str
    title: str
    description: str


def item_document(item: ItemLike) -> dict:
    """The catalog fields of one item; keyword fields are added by sync."""
    return {"id": item.id, "title": item.title, "description": item.description}


def index_actions(index: str, items: Iterable[ItemLike]) -> Iterator[dict]:
    """Bulk `index` actions keyed by item id, so re-sending a document overwrites it."""
    for item in items:
        yield {"_op_type": "index", "_index": index, "_id": item.id, "_source": item_document(item)}
