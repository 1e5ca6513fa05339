"""Keyword files (DESIGN.md section 6): JSONL, one `{"id": ..., "keywords": [...]}` a line.

They are the hand-off between generation, sync and eval, and may come from elsewhere,
so reading is strict (every problem names the file and line) and writing is crash-safe:
`write_keyword_file` replaces a file atomically, `append_keyword_rows` makes each batch
durable before returning so that a resumed generation loses at most a partial last line.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.errors import InputError

Row = tuple[str, list[str]]


def _line(item_id: str, keywords: Iterable[str]) -> str:
    return json.dumps({"id": item_id, "keywords": list(keywords)}, ensure_ascii=False) + "\n"


def write_keyword_file(path: Path | str, rows: Iterable[Row]) -> int:
    """Write all rows to `path` atomically (temp file in the same folder, then rename).

    Returns the number of rows written. A reader never sees a half-written file.
    """
    count = 0
    with atomic_open(path) as out:
        for item_id, keywords in rows:
            out.write(_line(item_id, keywords))
            count += 1
    return count


def append_keyword_rows(path: Path | str, rows: Iterable[Row]) -> int:
    """Append one batch and fsync it, so a crash loses at most the batch in flight.

    If the file ends in a partial line (a crash mid-write), a newline is written first
    so the new rows start on their own line; the partial line stays malformed and is
    skipped by `read_keyword_file(..., tolerate_partial_tail=True)` only when last, so
    resuming code should rewrite the file (read tolerantly, `write_keyword_file`) first.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(path, "a+b") as out:
        if out.tell() > 0:
            out.seek(-1, os.SEEK_END)
            if out.read(1) != b"\n":
                out.write(b"\n")
        for item_id, keywords in rows:
            out.write(_line(item_id, keywords).encode("utf-8"))
            count += 1
        out.flush()
        os.fsync(out.fileno())
    return count


def _parse_row(path: Path, number: int, line: str) -> Row:
    where = f"{path}:{number}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: malformed JSON ({err.msg} at column {err.colno})") from err
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "id" not in obj:
        raise InputError(f"{where}: missing field 'id'")
    if "keywords" not in obj:
        raise InputError(f"{where}: missing field 'keywords'")
    item_id, keywords = obj["id"], obj["keywords"]
    if not isinstance(item_id, (str, int)) or isinstance(item_id, bool) or not str(item_id).strip():
        raise InputError(f"{where}: field 'id' must be a non-empty string")
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise InputError(f"{where}: field 'keywords' must be a list of strings")
    return str(item_id).strip(), keywords  # stripped like catalog ids (data.validate.identifier)


def read_keyword_file(path: Path | str, tolerate_partial_tail: bool = False) -> dict[str, list[str]]:
    """Read a keyword file into `{id: keywords}` in file order.

    Raises `InputError` naming the file and line on malformed JSON, missing or mistyped
    fields, and duplicate ids. With `tolerate_partial_tail`, an unparsable LAST line
    without a trailing newline (what a crash mid-append leaves) is skipped with a warning.
    Blank lines are ignored.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise InputError(f"{path}: keyword file not found") from err
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text (byte {err.start})") from err
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines.pop()
    rows: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        is_tail = number == len(lines) and not ends_with_newline
        try:
            item_id, keywords = _parse_row(path, number, line)
        except InputError:
            if is_tail and tolerate_partial_tail:
                warnings.warn(f"{path}:{number}: ignoring a truncated last line", stacklevel=2)
                break
            raise
        if item_id in rows:
            raise InputError(f"{path}:{number}: duplicate id {item_id!r} (first on line {first_line[item_id]})")
        rows[item_id] = keywords
        first_line[item_id] = number
    return rows
