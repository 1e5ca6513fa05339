"""The WANDS layout (Wayfair ANnotation DataSet): tab-separated `product.csv`,
`query.csv`, `label.csv` with header rows.

Columns used: product `product_id`, `product_name`, `product_description`; query
`query_id`, `query`; label `query_id`, `product_id`, `label` with values Exact, Partial,
Irrelevant. Grades are mapped to 2/1/0 so that the paper's binarization (Exact + Partial
relevant) is the threshold 1. Other columns (classes, features, ratings) are ignored.
"""

from __future__ import annotations

from pathlib import Path

from cogr_search.data.model import Item, Query
from cogr_search.data.validate import (
    IdRegistry,
    LabelTable,
    cell,
    fail,
    header_index,
    identifier,
    tsv_rows,
)

PRODUCTS, QUERIES, LABELS = "product.csv", "query.csv", "label.csv"
GRADES = {"exact": 2.0, "partial": 1.0, "irrelevant": 0.0}
RELEVANCE_THRESHOLD = 1.0  # Exact + Partial


def is_wands(directory: Path) -> bool:
    return all((directory / name).is_file() for name in (PRODUCTS, QUERIES, LABELS))


def _rows_with_header(path: Path, wanted: dict[str, str]):
    rows = tsv_rows(path)
    try:
        line, header = next(rows)
    except StopIteration:
        raise fail(path, None, "file is empty (expected a header row)") from None
    if line != 1:
        raise fail(path, line, "expected the header row on line 1")
    return header_index(path, header, wanted), rows


def read_products(path: Path) -> dict[str, Item]:
    columns = {"id": "product_id", "title": "product_name", "description": "product_description"}
    index, rows = _rows_with_header(path, columns)
    items: dict[str, Item] = {}
    seen = IdRegistry(path, "product")
    for line, row in rows:
        item_id = identifier(path, line, cell(path, line, row, index["id"], columns["id"]), columns["id"])
        seen.add(item_id, line)
        title = cell(path, line, row, index["title"], columns["title"]).strip()
        description = row[index["description"]].strip() if index["description"] < len(row) else ""
        if not title and not description:
            raise fail(path, line, f"product {item_id!r} has neither 'product_name' nor 'product_description'")
        items[item_id] = Item(item_id, title, description)
    return items


def read_queries(path: Path) -> dict[str, Query]:
    columns = {"id": "query_id", "text": "query"}
    index, rows = _rows_with_header(path, columns)
    queries: dict[str, Query] = {}
    seen = IdRegistry(path, "query")
    for line, row in rows:
        query_id = identifier(path, line, cell(path, line, row, index["id"], columns["id"]), columns["id"])
        seen.add(query_id, line)
        text = cell(path, line, row, index["text"], columns["text"]).strip()
        if not text:
            raise fail(path, line, f"field 'query': query {query_id!r} is empty")
        queries[query_id] = Query(query_id, text)
    return queries


def read_labels(path: Path, queries: dict[str, Query], items: dict[str, Item], duplicates: str = "mean") -> LabelTable:
    columns = {"query": "query_id", "item": "product_id", "label": "label"}
    index, rows = _rows_with_header(path, columns)
    labels = LabelTable(path, queries, items, duplicates)
    for line, row in rows:
        query_id = identifier(path, line, cell(path, line, row, index["query"], "query_id"), "query_id")
        item_id = identifier(path, line, cell(path, line, row, index["item"], "product_id"), "product_id")
        raw = cell(path, line, row, index["label"], "label").strip()
        grade = GRADES.get(raw.lower())
        if grade is None:
            raise fail(path, line, f"field 'label': expected Exact, Partial or Irrelevant, got {raw[:40]!r}")
        labels.add(line, query_id, item_id, grade)
    return labels


def read_wands(directory: Path, duplicates: str = "mean") -> tuple[dict[str, Item], dict[str, Query], LabelTable]:
    items = read_products(directory / PRODUCTS)
    queries = read_queries(directory / QUERIES)
    labels = read_labels(directory / LABELS, queries, items, duplicates)
    return items, queries, labels
