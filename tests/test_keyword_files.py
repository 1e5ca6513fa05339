"""Keyword files: strict reading, atomic writing, crash-tolerant appending."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogr_search.errors import InputError
from cogr_search.runs.keyword_files import append_keyword_rows, read_keyword_file, write_keyword_file


def test_round_trip_keeps_order_and_unicode(tmp_path: Path) -> None:
    path = tmp_path / "kw.jsonl"
    rows = [("b", ["x", "ÿ café"]), ("a", []), ("c", ["z"])]
    assert write_keyword_file(path, rows) == 3
    assert list(read_keyword_file(path).items()) == [(i, k) for i, k in rows]


def test_write_replaces_atomically_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "kw.jsonl"
    write_keyword_file(path, [("a", ["1"])])
    write_keyword_file(path, [("b", ["2"])])
    assert read_keyword_file(path) == {"b": ["2"]}
    assert [p.name for p in tmp_path.iterdir()] == ["kw.jsonl"]


def test_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "kw.jsonl"
    write_keyword_file(path, [("a", ["1"])])

    def rows():
        yield ("b", ["2"])
        raise RuntimeError("generator crashed")

    with pytest.raises(RuntimeError):
        write_keyword_file(path, rows())
    assert read_keyword_file(path) == {"a": ["1"]}
    assert [p.name for p in tmp_path.iterdir()] == ["kw.jsonl"]


def test_append_batches(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kw.jsonl"
    append_keyword_rows(path, [("a", ["1"])])
    append_keyword_rows(path, [("b", ["2"]), ("c", [])])
    assert read_keyword_file(path) == {"a": ["1"], "b": ["2"], "c": []}


def test_partial_tail_is_tolerated_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "kw.jsonl"
    append_keyword_rows(path, [("a", ["1"])])
    with open(path, "a", encoding="utf-8") as out:
        out.write('{"id": "b", "keyw')
    with pytest.raises(InputError, match=r"kw\.jsonl:2: malformed JSON"):
        read_keyword_file(path)
    with pytest.warns(UserWarning, match="truncated last line"):
        assert read_keyword_file(path, tolerate_partial_tail=True) == {"a": ["1"]}


def test_append_after_partial_tail_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "kw.jsonl"
    path.write_text('{"id": "a", "keywords": ["1"]}\n{"id": "b"', encoding="utf-8")
    append_keyword_rows(path, [("c", ["3"])])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[-1] == '{"id": "c", "keywords": ["3"]}'
    with pytest.raises(InputError, match=":2: malformed JSON"):
        read_keyword_file(path, tolerate_partial_tail=True)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "keywords": ["1"]}\n{"id": "a", "keywords": []}\n', r":2: duplicate id 'a' \(first on line 1\)"),
        ('{"keywords": ["1"]}\n', r":1: missing field 'id'"),
        ('{"id": "a"}\n', r":1: missing field 'keywords'"),
        ('{"id": "a", "keywords": "x"}\n', r":1: field 'keywords' must be a list of strings"),
        ('{"id": "a", "keywords": [1]}\n', r":1: field 'keywords' must be a list of strings"),
        ('{"id": "", "keywords": []}\n', r":1: field 'id' must be a non-empty string"),
        ('["a"]\n', r":1: expected a JSON object"),
        ('\n{"id": "a", "keywords": []}\n{oops}\n', r":3: malformed JSON"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="bad.jsonl" + message):
        read_keyword_file(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_keyword_file(tmp_path / "nope.jsonl")


def test_numeric_ids_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "kw.jsonl"
    path.write_text('{"id": 7, "keywords": ["x"]}\n', encoding="utf-8")
    assert read_keyword_file(path) == {"7": ["x"]}
