"""Reading catalog files strictly, so a bad row is reported once, precisely, and early.

Every loader goes through these helpers: text is decoded as UTF-8 (a UTF-8 byte-order
mark is accepted and dropped; anything else that is not UTF-8 is an error naming the
line), and every error is an `InputError` of the form `FILE:LINE: field 'x': problem`.
Loaders build plain dicts first and only construct the `Dataset` at the end, so a failure
anywhere leaves nothing half-loaded.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path

from cogr_search.errors import InputError

UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def where(path: Path, line: int | None = None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def fail(path: Path, line: int | None, message: str) -> InputError:
    """The error to raise: `FILE:LINE: message` (one line)."""
    return InputError(f"{where(path, line)}: {message}")


def require_file(path: Path) -> Path:
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    return path


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 (BOM dropped); other encodings fail with the line number."""
    data = require_file(path).read_bytes()
    if data.startswith(_UTF16_BOMS):
        raise fail(path, 1, "file is UTF-16 encoded; convert it to UTF-8")
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise fail(
            path, line, f"not valid UTF-8 (byte 0x{data[err.start]:02x} at column {column}); convert the file to UTF-8"
        ) from None


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) for non-blank lines; only '\\n' and '\\r\\n' end a line."""
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        line = line.removesuffix("\r")
        if line.strip():
            yield number, line


def jsonl_objects(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each JSON object line."""
    for number, line in text_lines(path):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise fail(path, number, f"invalid JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(obj, dict):
            raise fail(path, number, f"expected a JSON object, got {type(obj).__name__}")
        yield number, obj


def tsv_rows(path: Path, delimiter: str = "\t") -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a delimited file, csv-quoted fields allowed.

    The line number is the one the record starts on, so multi-line quoted fields still
    point the user at the right place.
    """
    text = read_text(path)
    csv.field_size_limit(1 << 30)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    start = 1
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                yield start, row
            start = reader.line_num + 1
    except csv.Error as err:
        raise fail(path, reader.line_num, f"malformed row ({err})") from None


def header_index(path: Path, header: list[str], wanted: dict[str, str]) -> dict[str, int]:
    """Column positions for logical names; `wanted` maps logical name -> column name."""
    cleaned = [h.strip() for h in header]
    out: dict[str, int] = {}
    for logical, column in wanted.items():
        if column not in cleaned:
            raise fail(path, 1, f"missing column {column!r} (header has: {', '.join(cleaned)})")
        out[logical] = cleaned.index(column)
    return out


def cell(path: Path, line: int, row: list[str], index: int, column: str) -> str:
    if index >= len(row):
        raise fail(path, line, f"field {column!r}: missing (row has {len(row)} fields, expected at least {index + 1})")
    return row[index]


def identifier(path: Path, line: int, value: object, field: str) -> str:
    """An id as a non-empty string; JSON numbers are accepted and turned into text."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise fail(path, line, f"field {field!r}: expected a string id, got {json.dumps(value)}")
    text = str(value).strip()
    if not text:
        raise fail(path, line, f"field {field!r}: empty id")
    return text


def text_field(path: Path, line: int, obj: dict, field: str, required: bool = False) -> str:
    value = obj.get(field)
    if value is None:
        if required:
            raise fail(path, line, f"field {field!r}: missing")
        return ""
    if not isinstance(value, str):
        raise fail(path, line, f"field {field!r}: expected text, got {json.dumps(value)[:40]}")
    return value


def score(path: Path, line: int, value: str | int | float, field: str = "score") -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise fail(path, line, f"field {field!r}: expected a number, got {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise fail(path, line, f"field {field!r}: expected a finite number, got {value!r}")
    return number


class IdRegistry:
    """Remembers where each id was first seen, to name both lines of a duplicate."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.first_line: dict[str, int] = {}

    def add(self, key: str, line: int) -> None:
        seen = self.first_line.setdefault(key, line)
        if seen != line:
            raise fail(self.path, line, f"duplicate {self.kind} id {key!r} (first on line {seen})")


DUPLICATE_POLICIES = ("mean", "max", "last", "error")


class LabelTable:
    """Judgements being read: checks both ends exist and resolves repeated pairs.

    Real sets repeat pairs (the shared Crowdflower file has 195, some with different
    grades, from several raters of one product). The default policy averages them, the
    neutral choice for rater grades; `error` makes any repeat a failure naming the line.
    """

    def __init__(self, path: Path, queries: dict, items: dict, duplicates: str = "mean") -> None:
        if duplicates not in DUPLICATE_POLICIES:
            raise InputError(f"duplicate label policy {duplicates!r}: expected one of {', '.join(DUPLICATE_POLICIES)}")
        self.path = path
        self.queries = queries
        self.items = items
        self.duplicates = duplicates
        self.labels: dict[str, dict[str, float]] = {}
        self.repeats: dict[tuple[str, str], list[float]] = {}
        self.first_line: dict[tuple[str, str], int] = {}

    def add(self, line: int, query_id: str, item_id: str, value: float) -> None:
        if query_id not in self.queries:
            raise fail(self.path, line, f"label points at unknown query id {query_id!r}")
        if item_id not in self.items:
            raise fail(self.path, line, f"label points at unknown item id {item_id!r}")
        graded = self.labels.setdefault(query_id, {})
        if item_id not in graded:
            graded[item_id] = value
            if self.duplicates == "error":
                self.first_line[(query_id, item_id)] = line
            return
        if self.duplicates == "error":
            first = self.first_line[(query_id, item_id)]
            raise fail(self.path, line, f"duplicate label for query {query_id!r} and item {item_id!r} (first on line {first})")
        self.repeats.setdefault((query_id, item_id), [graded[item_id]]).append(value)
        if self.duplicates == "last":
            graded[item_id] = value
        elif self.duplicates == "max":
            graded[item_id] = max(graded[item_id], value)

    def result(self) -> dict[str, dict[str, float]]:
        if self.duplicates == "mean":
            for (query_id, item_id), values in self.repeats.items():
                self.labels[query_id][item_id] = sum(values) / len(values)
        return self.labels

    def note(self) -> str | None:
        """A one-line remark for the user when repeats were merged."""
        if not self.repeats:
            return None
        conflicting = sum(1 for values in self.repeats.values() if len(set(values)) > 1)
        return (
            f"{self.path}: {len(self.repeats)} repeated (query, item) pairs merged by {self.duplicates}"
            f" ({conflicting} with different grades)"
        )
