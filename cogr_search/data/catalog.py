"""Plain catalogs: one CSV/TSV or JSONL file of items, with a column mapping.

Teams rarely have BEIR files; they have an export with their own column names. A
`ColumnMapping` says which column is the id, the title and (optionally) the description.
Queries and labels can come the same way (a directory with a `cogr-dataset.json` whose
`layout` is `catalog`, see `dataset.py`), so a team can evaluate on its own judgements
without converting anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cogr_search.data.model import Item, Query
from cogr_search.data.validate import (
    IdRegistry,
    LabelTable,
    fail,
    identifier,
    jsonl_objects,
    score,
    tsv_rows,
)
from cogr_search.errors import InputError

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": "\t"}


@dataclass(frozen=True)
class ColumnMapping:
    """Which source column holds each field. `description=None`: use a column named
    'description' if there is one, else leave descriptions empty."""

    id: str = "id"
    title: str = "title"
    description: str | None = None

    @classmethod
    def parse(cls, spec: str) -> ColumnMapping:
        """From `id=sku,title=name,description=desc` (any subset; others keep defaults)."""
        values: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, column = part.partition("=")
            key = key.strip()
            if not sep or key not in ("id", "title", "description") or not column.strip():
                raise InputError(f"--columns {spec!r}: expected FIELD=COLUMN pairs with FIELD in id, title, description")
            values[key] = column.strip()
        return cls(**values)


def is_catalog_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in (*JSONL_SUFFIXES, *DELIMITERS)


def records(path: Path, delimiter: str | None = None) -> Iterator[tuple[int, dict[str, object]]]:
    """(line, {column: value}) from a JSONL file or a delimited file with a header row."""
    suffix = path.suffix.lower()
    if delimiter is None and suffix in JSONL_SUFFIXES:
        yield from jsonl_objects(path)
        return
    sep = delimiter or DELIMITERS.get(suffix)
    if sep is None:
        raise InputError(f"{path}: unknown file type {suffix!r}; use .csv, .tsv or .jsonl")
    rows = tsv_rows(path, delimiter=sep)
    first = next(rows, None)
    if first is None:
        raise fail(path, None, "file is empty (expected a header row)")
    header = [h.strip() for h in first[1]]
    for line, row in rows:
        if len(row) > len(header):
            raise fail(path, line, f"row has {len(row)} fields but the header has {len(header)}")
        yield line, dict(zip(header, row))


def _value(path: Path, line: int, record: dict[str, object], column: str, required: bool) -> object:
    if column not in record:
        if required:
            raise fail(path, line, f"field {column!r}: missing")
        return None
    return record[column]


def _text(path: Path, line: int, value: object, column: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise fail(path, line, f"field {column!r}: expected text, got {type(value).__name__}")
    return str(value).strip()


def read_items(path: Path, mapping: ColumnMapping = ColumnMapping(), delimiter: str | None = None) -> dict[str, Item]:
    items: dict[str, Item] = {}
    seen = IdRegistry(path, "item")
    description_column = mapping.description or "description"
    for line, record in records(path, delimiter):
        item_id = identifier(path, line, _value(path, line, record, mapping.id, True), mapping.id)
        seen.add(item_id, line)
        title = _text(path, line, _value(path, line, record, mapping.title, True), mapping.title)
        raw = _value(path, line, record, description_column, mapping.description is not None)
        description = _text(path, line, raw, description_column)
        if not title and not description:
            raise fail(path, line, f"item {item_id!r} has neither {mapping.title!r} nor {description_column!r}")
        items[item_id] = Item(item_id, title, description)
    if not items:
        raise fail(path, None, "no items found")
    return items


def read_queries(path: Path, id_column: str = "id", text_column: str = "text") -> dict[str, Query]:
    queries: dict[str, Query] = {}
    seen = IdRegistry(path, "query")
    for line, record in records(path):
        query_id = identifier(path, line, _value(path, line, record, id_column, True), id_column)
        seen.add(query_id, line)
        text = _text(path, line, _value(path, line, record, text_column, True), text_column)
        if not text:
            raise fail(path, line, f"field {text_column!r}: query {query_id!r} is empty")
        queries[query_id] = Query(query_id, text)
    return queries


def read_labels(
    path: Path,
    queries: dict[str, Query],
    items: dict[str, Item],
    query_column: str = "query_id",
    item_column: str = "item_id",
    score_column: str = "score",
    grades: dict[str, float] | None = None,
    duplicates: str = "mean",
) -> LabelTable:
    """Judgements; `grades` maps text labels (e.g. Exact/Partial) to scores, case-insensitive."""
    lowered = {k.lower(): float(v) for k, v in (grades or {}).items()}
    labels = LabelTable(path, queries, items, duplicates)
    for line, record in records(path):
        query_id = identifier(path, line, _value(path, line, record, query_column, True), query_column)
        item_id = identifier(path, line, _value(path, line, record, item_column, True), item_column)
        raw = _value(path, line, record, score_column, True)
        if lowered and str(raw).strip().lower() in lowered:
            value = lowered[str(raw).strip().lower()]
        else:
            value = score(path, line, raw if isinstance(raw, (int, float)) else str(raw).strip(), score_column)
        labels.add(line, query_id, item_id, value)
    return labels
