"""The BEIR layout: `corpus.jsonl`, `queries.jsonl`, `qrels.tsv` in one directory.

corpus lines are `{"_id", "title", "text"}` (text is the description), query lines
`{"_id", "text"}`, and qrels is tab-separated `query-id  corpus-id  score` with an
optional header line (BEIR writes one; hand-made files often do not).
"""

from __future__ import annotations

from pathlib import Path

from cogr_search.data.model import Item, Query
from cogr_search.data.validate import (
    IdRegistry,
    LabelTable,
    fail,
    identifier,
    jsonl_objects,
    score,
    text_field,
    text_lines,
)

CORPUS, QUERIES, QRELS = "corpus.jsonl", "queries.jsonl", "qrels.tsv"
QRELS_HEADER = ("query-id", "corpus-id", "score")


def is_beir(directory: Path) -> bool:
    return all((directory / name).is_file() for name in (CORPUS, QUERIES, QRELS))


def read_corpus(path: Path) -> dict[str, Item]:
    items: dict[str, Item] = {}
    seen = IdRegistry(path, "item")
    for line, obj in jsonl_objects(path):
        item_id = identifier(path, line, obj.get("_id"), "_id")
        seen.add(item_id, line)
        title = text_field(path, line, obj, "title")
        description = text_field(path, line, obj, "text")
        if not title.strip() and not description.strip():
            raise fail(path, line, f"item {item_id!r} has neither 'title' nor 'text'")
        items[item_id] = Item(item_id, title, description)
    return items


def read_queries(path: Path) -> dict[str, Query]:
    queries: dict[str, Query] = {}
    seen = IdRegistry(path, "query")
    for line, obj in jsonl_objects(path):
        query_id = identifier(path, line, obj.get("_id"), "_id")
        seen.add(query_id, line)
        text = text_field(path, line, obj, "text", required=True)
        if not text.strip():
            raise fail(path, line, f"field 'text': query {query_id!r} is empty")
        queries[query_id] = Query(query_id, text)
    return queries


def read_qrels(path: Path, queries: dict[str, Query], items: dict[str, Item], duplicates: str = "mean") -> LabelTable:
    labels = LabelTable(path, queries, items, duplicates)
    for line, raw in text_lines(path):
        fields = raw.split("\t")
        if line == 1 and tuple(f.strip().lower() for f in fields[:3]) == QRELS_HEADER:
            continue
        if len(fields) == 4 and fields[1].strip() in ("0", "Q0"):
            fields = [fields[0], fields[2], fields[3]]  # TREC qrels: qid iter docid rel
        if len(fields) != 3:
            raise fail(path, line, f"expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}")
        query_id = identifier(path, line, fields[0].strip(), "query-id")
        item_id = identifier(path, line, fields[1].strip(), "corpus-id")
        labels.add(line, query_id, item_id, score(path, line, fields[2].strip()))
    return labels


def read_beir(directory: Path, duplicates: str = "mean") -> tuple[dict[str, Item], dict[str, Query], LabelTable]:
    items = read_corpus(directory / CORPUS)
    queries = read_queries(directory / QUERIES)
    labels = read_qrels(directory / QRELS, queries, items, duplicates)
    return items, queries, labels
