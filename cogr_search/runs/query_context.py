"""Search-results context for the query generator (paper Table 4, "++ search results").

With `--query-context bm25:K` the query prompt also shows the titles of the query's
top-K BM25 hits. A small model can copy product words from those titles, and the item
keywords were written from titles too, so the two sides meet more often.

The titles come from the catalog's OpenSearch index (`cluster/context.py`), fetched
once per query: a run stores them for its training and validation queries in
`query_context.jsonl`, so Phase 2 and evaluation see exactly the context SFT saw and
need no cluster; a query the run has not stored (serving, `expand`, another query set)
is fetched live through a fallback source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.errors import CogrError, InputError

# texts -> the titles of each text's top hits, in rank order
ContextSource = Callable[[Sequence[str]], list[list[str]]]

_SPEC = re.compile(r"bm25:(\d+)")


def context_size(spec: str | None) -> int | None:
    """K of a `bm25:K` spec; `None` (or "none") means no context."""
    if spec is None or spec == "none":
        return None
    match = _SPEC.fullmatch(spec)
    if not match or not 1 <= int(match.group(1)) <= 20:
        raise InputError(f"query context {spec!r}: expected bm25:K with K from 1 to 20, or none")
    return int(match.group(1))


def text_key(text: str) -> str:
    """Queries are looked up by their whitespace-normalized text."""
    return " ".join(text.split())


def write_context_file(path: Path, rows: Iterable[tuple[str, str, Sequence[str]]]) -> int:
    """`(query id, query text, titles)` rows as JSONL, atomically."""
    count = 0
    with atomic_open(path) as out:
        for qid, text, titles in rows:
            out.write(json.dumps({"id": qid, "text": text, "titles": list(titles)}, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_context_file(path: Path) -> dict[str, dict]:
    """Query id -> `{"text", "titles"}`; a bad line names the file and line."""
    rows: dict[str, dict] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as err:
        raise CogrError(f"{path}: missing (the run's stored search results)") from err
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line)
            qid, text, titles = str(row["id"]), str(row["text"]), [str(t) for t in row["titles"]]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise InputError(f"{path}: line {number}: expected {{\"id\", \"text\", \"titles\"}} ({err})") from err
        rows[qid] = {"text": text, "titles": titles}
    return rows


class StoredContext:
    """A run's stored titles by query text, with a live source for the rest."""

    def __init__(self, stored: Mapping[str, dict], fallback: ContextSource | None = None, where: str = "") -> None:
        self.by_text = {text_key(row["text"]): row["titles"] for row in stored.values()}
        self.fallback = fallback
        self.where = where

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        keys = [text_key(t) for t in texts]
        missing = [k for k in dict.fromkeys(keys) if k not in self.by_text]
        fetched: dict[str, list[str]] = {}
        if missing:
            if self.fallback is None:
                raise CogrError(
                    f"{self.where}: query {missing[0]!r} has no stored search results; "
                    "give the catalog index (--context-index) to fetch them"
                )
            # not kept: a service sees endless new queries (its own LRU cache covers repeats)
            fetched = dict(zip(missing, self.fallback(missing)))
        return [list(self.by_text[k] if k in self.by_text else fetched[k]) for k in keys]
