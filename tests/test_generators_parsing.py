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
    parsed = parse_keywords(_output("base", "item", "greedy", "Outdoor patio"))
    assert parsed.keywords[1:] == [
        "outdoor patio umbrella",
        "tilt and crank",
        "uv resistant polyester canopy",
        "outdoor patio umbrella 9 ft",
    ]


def test_bulleted_lists_lose_their_bullets() -> None:
    parsed = parse_keywords(_output("base", "query", "greedy", "oak dining"))
    assert parsed.keywords[1:] == ["oak", "table", "dining"]
    assert not any(k.startswith(("*", "-")) for k in parsed.keywords)


def test_trained_item_generator_output() -> None:
    parsed = parse_keywords(_output("sft-item", "item", "greedy", "Outdoor patio"))
    assert parsed.keywords == ["tilt and crank", "uv resistant polyester canopy"]
    assert not parsed.oversized
