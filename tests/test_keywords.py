"""Normalization and parsing of keyword sets (DESIGN.md section 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cogr_search.keywords import (
    DEFAULT_K_MAX,
    MAX_KEYWORD_CHARS,
    ParsedKeywords,
    keyword_set,
    normalize,
    parse_keywords,
    representation,
)

VECTORS = Path(__file__).parent / "vectors" / "normalize.jsonl"


def load_vectors() -> list[dict]:
    return [json.loads(line) for line in VECTORS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("case", load_vectors(), ids=lambda c: repr(c["input"])[:40])
def test_shared_vectors(case: dict) -> None:
    expected = case["expected"]
    assert (normalize(case["input"]) or None) == expected


def test_vector_file_is_large_enough_and_has_drops() -> None:
    cases = load_vectors()
    assert len(cases) >= 60
    assert any(c["expected"] is None for c in cases)
    assert all(set(c) == {"input", "expected"} for c in cases)


@given(st.text(max_size=40))
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@given(st.text(max_size=40))
def test_normalized_has_no_edge_space_or_double_space(text: str) -> None:
    out = normalize(text)
    assert out == out.strip()
    assert "  " not in out
    assert "\n" not in out and "\t" not in out


def test_parse_numbered_list() -> None:
    parsed = parse_keywords("1. Red Shoes\n2. blue sandals\n3) hiking boots\n(4) flip flops")
    assert parsed == ParsedKeywords(["red shoes", "blue sandals", "hiking boots", "flip flops"], False)


def test_parse_bullets_quotes_semicolons() -> None:
    text = '- "red shoes"\n* blue sandals; • \'boots\'\n\u2014 clogs'
    assert parse_keywords(text).keywords == ["red shoes", "blue sandals", "boots", "clogs"]


def test_parse_keeps_decimal_numbers_and_drops_empty_items() -> None:
    text = "1.5 gallon, , ;\n\n2) 3.5 in. drill bit,   ,"
    assert parse_keywords(text).keywords == ["1.5 gallon", "3.5 in. drill bit"]


def test_parse_keeps_thousands_separators_whole() -> None:
    text = "2,000 lb capacity, 1,250,000 btu,10,000mm, sizes 1,2,3, 2, 000 pcs, 12,5000"
    assert parse_keywords(text).keywords == [
        "2,000 lb capacity",
        "1,250,000 btu",
        "10,000mm",
        "sizes 1",
        "2",
        "3",
        "000 pcs",
        "12",
        "5000",
    ]


def test_parse_deduplicates_after_normalization_keeping_first_order() -> None:
    text = "Drill, drill, DRILL!, saw, Drill bit, \uff24rill"
    assert parse_keywords(text).keywords == ["drill", "saw", "drill bit"]


def test_parse_strips_a_leading_label() -> None:
    assert parse_keywords("Keywords: lamp, shade").keywords == ["lamp", "shade"]


def test_parse_empty_output() -> None:
    assert parse_keywords("") == ParsedKeywords([], False)
    assert parse_keywords(" ,\n; - * ") == ParsedKeywords([], False)


def test_oversized_is_strictly_more_than_k_max_distinct() -> None:
    exactly = ", ".join(f"kw{i}" for i in range(DEFAULT_K_MAX))
    assert parse_keywords(exactly).oversized is False
    over = exactly + ", kw0, extra"
    parsed = parse_keywords(over)
    assert parsed.oversized is True
    assert len(parsed.keywords) == DEFAULT_K_MAX + 1
    assert parsed.keywords[-1] == "extra"
    assert parse_keywords("a, b, c", k_max=2).oversized is True
    assert parse_keywords("a, a, a", k_max=1).oversized is False


def test_parse_drops_run_on_items() -> None:
    run_on = "word " * (MAX_KEYWORD_CHARS // 5 + 5)
    assert parse_keywords(f"lamp, {run_on}, shade").keywords == ["lamp", "shade"]


def test_keyword_set_normalizes_and_dedupes() -> None:
    assert keyword_set(["Lamp", " lamp ", "", "!!", "Shade"]) == ["lamp", "shade"]


def test_representation_adds_text_after_truncation() -> None:
    assert representation(["a", "b", "c"], "Title X", k_max=2) == ["a", "b", "title x"]
    assert representation(["title x", "b"], "Title X") == ["title x", "b"]
    assert representation([], "...") == []
