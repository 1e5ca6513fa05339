"""Prompt templates are data: loading, rendering, validation, and the sampling presets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogr_search.errors import InputError
from cogr_search.generators.backend import GREEDY, INIT, PRESETS, ROLLOUT, preset
from cogr_search.generators.prompts import assistant_text, load_prompts, parse_prompts


def test_default_prompts_render_item_and_query_messages() -> None:
    prompts = load_prompts()
    assert prompts.version
    messages = prompts.item_messages("Oak Dresser", "Solid  oak,\nfour drawers.", max_keywords=7)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "Oak Dresser" in messages[1]["content"]
    assert "Solid oak, four drawers." in messages[1]["content"]  # whitespace collapsed
    assert "up to 7 " in messages[0]["content"]  # the budget is part of the instruction
    query = prompts.query_messages("  oak dresser ", max_keywords=15)
    assert query[-1]["content"].count("oak dresser") == 1 and "up to 15 " in query[0]["content"]


def test_every_prompt_of_a_side_shares_the_system_turn() -> None:
    """The instruction lives in the system turn so that batches share a long prefix."""
    prompts = load_prompts()
    a = prompts.item_messages("Oak Dresser", "Solid oak.", 10)
    b = prompts.item_messages("Blue lamp", "", 10)
    assert a[0] == b[0] and a[1] != b[1]


def test_items_without_description_use_their_own_template() -> None:
    prompts = load_prompts()
    content = prompts.item_messages("Blue chair", "", 10)[-1]["content"]
    assert "Description" not in content


def test_few_shot_adds_example_turns_before_the_question() -> None:
    prompts = load_prompts()
    messages = prompts.item_messages("Blue chair", "", 10, few_shot=True)
    roles = [m["role"] for m in messages]
    assert roles[0] == "system" and roles[-1] == "user"
    assert roles.count("assistant") == len(prompts.item.examples) >= 1
    assert messages[2]["content"] == prompts.item.examples[0].keywords


def test_long_descriptions_are_clipped_at_a_word_boundary() -> None:
    prompts = load_prompts()
    long = "word " * 500
    content = prompts.item_messages("T", long, 10)[-1]["content"]
    assert len(content) < prompts.item.max_description_chars + 200
    assert "word ..." in content


def test_a_prompt_file_by_path_and_its_errors(tmp_path: Path) -> None:
    source = load_prompts().source
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**source, "version": "7"}))
    assert load_prompts(path).version == "7"
    path.write_text(json.dumps({**source, "query": {**source["query"], "user": "Q: {question}"}}))
    with pytest.raises(InputError, match=r"query\.user: bad placeholder"):
        load_prompts(path)
    path.write_text('{"name": "x",')
    with pytest.raises(InputError, match="p.json: line 1"):
        load_prompts(path)
    with pytest.raises(InputError, match="missing field 'item'"):
        parse_prompts({"name": "x", "version": "1", "query": source["query"]})
    with pytest.raises(InputError, match="not found"):
        load_prompts("no-such-prompt-set")


def test_saved_prompts_reload_identically(tmp_path: Path) -> None:
    prompts = load_prompts()
    prompts.save(tmp_path / "prompts.json")
    again = load_prompts(tmp_path / "prompts.json")
    assert again == prompts
    assert again.item_messages("A", "B", 3) == prompts.item_messages("A", "B", 3)


def test_assistant_text_is_one_comma_separated_line() -> None:
    assert assistant_text(["oak table", "dining table"]) == "oak table, dining table"


def test_presets_follow_table_5() -> None:
    assert (ROLLOUT.temperature, ROLLOUT.top_p, ROLLOUT.top_k, ROLLOUT.min_p) == (1.0, 1.0, -1, 0.0)
    assert (INIT.temperature, INIT.top_p, INIT.top_k, INIT.min_p) == (0.7, 0.8, 20, 0.0)
    assert PRESETS["eval"] == PRESETS["index"] == INIT
    assert GREEDY.greedy
    assert preset("eval", seed=3).seed == 3 and INIT.seed is None
    with pytest.raises(InputError, match="unknown sampling preset"):
        preset("hot")
