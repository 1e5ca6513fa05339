"""Parsing of real generator outputs, recorded from the CPU model (SmolLM2-135M-Instruct):
the raw base model, the base model with few-shot turns, and generators after a few SFT
steps. Re-record with tests/fixtures/model_outputs/record.py; the expectations below
were checked by hand against the recorded texts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogr_search.keywords import normalize, parse_keywords

FIXTURES = Path(__file__).parent / "fixtures" / "model_outputs" / "outputs.jsonl"
OUTPUTS = [json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _output(model: str, mode: str, decoding: str, starts: str) -> str:
    [row] = [
        r for r in OUTPUTS
        if r["model"] == model and r["mode"] == mode and r["decoding"] == decoding and r["input"].startswith(starts)
    ]
    return row["output"]


def test_fixtures_cover_base_few_shot_and_trained_outputs() -> None:
    assert {(r["model"], r["mode"]) for r in OUTPUTS} >= {
        ("base", "item"), ("base", "item-fewshot"), ("base", "query"), ("sft-item", "item"), ("sft-query", "query"),
    }


@pytest.mark.parametrize("row", OUTPUTS, ids=lambda r: f"{r['model']}-{r['mode']}-{r['decoding']}-{r['input'][:12]}")
def test_every_output_parses_into_a_clean_keyword_set(row: dict) -> None:
    parsed = parse_keywords(row["output"])
    assert len(parsed.keywords) == len(set(parsed.keywords))
    for keyword in parsed.keywords:
        assert keyword == normalize(keyword) != ""
        assert "," not in keyword and "\n" not in keyword
    if row["model"] != "base" or row["mode"] == "item-fewshot":
        # the format the generators are trained on (and shown in few-shot turns)
        assert parsed.keywords, row["output"]


def test_repetition_loops_collapse_to_distinct_keywords() -> None:
    text = _output("base", "item-fewshot", "greedy", "Cordless drill")
    assert text.count("drill-head") > 5
    assert parse_keywords(text).keywords == ["cordless drill", "drill", "drill-head"]


def test_a_trailing_comma_from_the_token_limit_is_harmless() -> None:
    text = _output("sft-query", "query", "init-seed0", "bathroom storage")
    assert text.rstrip().endswith(",")
    assert parse_keywords(text).keywords == ["dresser", "linen", "cotton", "wool"]


def test_numbered_lists_after_a_preamble() -> None:
    text = _output("base", "item", "greedy", "Outdoor patio")
    assert text.startswith("Here's a list of 10 search keywords for finding the item:")
    parsed = parse_keywords(text)
    assert parsed.keywords == [
        "outdoor patio umbrella",
        "tilt and crank",
        "uv resistant polyester canopy",
        "outdoor patio umbrella 9 ft",
    ]


def test_bulleted_lists_lose_their_bullets() -> None:
    parsed = parse_keywords(_output("base", "query", "greedy", "oak dining"))
    assert parsed.keywords == ["oak", "table", "dining"]  # the "Here's a list of 15 items ..." line is gone
    assert not any(k.startswith(("*", "-")) for k in parsed.keywords)


def test_trained_item_generator_output() -> None:
    parsed = parse_keywords(_output("sft-item", "item", "greedy", "Outdoor patio"))
    assert parsed.keywords == ["tilt and crank", "uv resistant polyester canopy"]
    assert not parsed.oversized


@pytest.mark.parametrize("row", [r for r in OUTPUTS if r["output"].lower().startswith(("here's", "here is"))],
                         ids=lambda r: f"{r['model']}-{r['mode']}-{r['decoding']}-{r['input'][:12]}")
def test_no_recorded_preamble_survives_as_a_keyword(row: dict) -> None:
    keywords = parse_keywords(row["output"]).keywords
    assert not any(k.startswith(("here's", "here is")) or k.endswith(":") for k in keywords), keywords


def test_a_preamble_ending_in_a_colon_goes_with_its_commas() -> None:
    text = _output("base", "item", "init-seed0", "Blue velvet")
    assert text.startswith("To find a Blue Velvet accent chair, you could search for:\n")
    assert parse_keywords(text).keywords == ["blue velvet", "luxe", "luxe-c"]


@pytest.mark.parametrize(("text", "keywords"), [
    ("Here are some keywords: lamp, desk", ["lamp", "desk"]),  # one line: only up to the colon goes
    ("Sure! Here's a list of keywords\n- lamp\n- desk", ["lamp", "desk"]),  # no colon
    ("Here's a possible response:\r\nlamp\r\ndesk", ["lamp", "desk"]),
    ("Below are the keywords:\n1. lamp\n2. desk", ["lamp", "desk"]),
])
def test_preambles_are_dropped(text: str, keywords: list[str]) -> None:
    assert parse_keywords(text).keywords == keywords


@pytest.mark.parametrize(("text", "keywords"), [
    ("lamp, desk, chair:\nsofa", ["lamp", "desk", "chair", "sofa"]),  # a list line ending in ':'
    ("Outdoor patio umbrella 9 ft:\n- tilt and crank", ["outdoor patio umbrella 9 ft", "tilt and crank"]),
    ("here is love vinyl, record player", ["here is love vinyl", "record player"]),  # no list word
    ("sure grip handle, non-slip", ["sure grip handle", "non-slip"]),
    ("i-beam bracket:\n- steel", ["i-beam bracket", "steel"]),
    ("1. here are keywords:\n2. lamp", ["here are keywords", "lamp"]),  # a numbered item is never a preamble
    ("oak table\ndining chair", ["oak table", "dining chair"]),
])
def test_real_keywords_are_kept(text: str, keywords: list[str]) -> None:
    assert parse_keywords(text).keywords == keywords
