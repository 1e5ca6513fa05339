"""`cogr-search demo`'s flags become DemoOptions: a flag not given keeps the demo's
default, `--rl-steps` sets both sides, and a step count below 1 is refused by click."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cogr_search.cli.demo_cmd import demo, demo_options
from cogr_search.demo import DemoOptions


def test_flags_not_given_keep_the_demo_defaults() -> None:
    options = demo_options("cogr-demo", "demo", None, sft_steps=None, rl_rounds=None, rl_steps=None,
                           query_context=None)
    assert options == DemoOptions()


def test_rl_steps_sets_both_sides_and_nothing_else(tmp_path: Path) -> None:
    options = demo_options("idx", "demo48", tmp_path, sft_steps=None, rl_rounds=2, rl_steps=48, query_context=None)
    assert (options.query_rl_steps, options.item_rl_steps) == (48, 48)
    assert (options.index, options.run, options.runs_dir, options.rl_rounds) == ("idx", "demo48", tmp_path, 2)
    assert options.sft_steps == DemoOptions().sft_steps


def test_rl_steps_below_one_is_a_usage_error() -> None:
    result = CliRunner().invoke(demo, ["--rl-steps", "0"])
    assert result.exit_code == 2
    assert "--rl-steps" in result.output
