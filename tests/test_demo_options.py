"""`cogr-search demo` trains with the `demo` preset of the training configs: a flag not
given keeps the preset's value, `--rl-steps` sets both sides, a step count below 1 is
refused by click, and `train sft/rl --preset demo` build the very same configs."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cogr_search.cli.demo_cmd import demo, demo_options
from cogr_search.cli.train_cmds import rl_config_from
from cogr_search.demo import DemoOptions
from cogr_search.runs.config import Phase2Config
from cogr_search.runs.presets import PHASE2_PRESETS, preset


def test_flags_not_given_keep_the_preset() -> None:
    options = demo_options("cogr-demo", "demo", None, sft_steps=None, rl_rounds=None, rl_steps=None,
                           query_context=None)
    assert options == DemoOptions()
    phase2 = options.phase2()
    assert (phase2.rounds, phase2.query.max_steps, phase2.item.max_steps) == (1, 8, 8)
    assert phase2.query.lora and phase2.query.learning_rate == 2e-4 and phase2.item.top_k == 20
    phase1 = options.phase1(Path("data"), Path("model"))
    assert (phase1.sft.max_steps, phase1.sft.train_layers, phase1.item_keywords, phase1.val_fraction) == (20, 8, 8, 0.25)


def test_rl_steps_sets_both_sides_and_nothing_else(tmp_path: Path) -> None:
    options = demo_options("idx", "demo48", tmp_path, sft_steps=None, rl_rounds=2, rl_steps=48, query_context=None)
    phase2 = options.phase2()
    assert (phase2.query.max_steps, phase2.item.max_steps, phase2.rounds) == (48, 48, 2)
    assert (options.index, options.run, options.runs_dir) == ("idx", "demo48", tmp_path)
    assert options.phase1(Path("d"), Path("m")).sft == DemoOptions().phase1(Path("d"), Path("m")).sft


def test_the_demo_preset_is_what_train_rl_preset_demo_builds() -> None:
    from_flags = rl_config_from(preset(PHASE2_PRESETS, "demo", Phase2Config().to_json()), {})
    assert from_flags == DemoOptions().phase2()


def test_rl_steps_below_one_is_a_usage_error() -> None:
    result = CliRunner().invoke(demo, ["--rl-steps", "0"])
    assert result.exit_code == 2
    assert "--rl-steps" in result.output
