"""The zero-learning warning of a GRPO phase, on real GRPO steps of the tiny model: it
fires when every rollout earns the same reward (no advantage, no gradient) and stays
silent when rewards differ inside the groups; `report --run` marks such a phase."""

from __future__ import annotations

from pathlib import Path

from cogr_search.evaluation.run_report import NOTHING_LEARNT, run_markdown
from cogr_search.runs.config import GRPOSideConfig
from cogr_search.training.learning_check import no_learning_note

CONFIG = GRPOSideConfig(learning_rate=1e-5, max_steps=2, num_generations=4, prompts_per_step=2,
                        max_completion_length=12, temperature=1.0)
ROWS = [{"prompt": [{"role": "user", "content": f"Query: lamp {n}"}], "query_id": f"q{n}"} for n in range(4)]


def _constant(completions: list, **_: object) -> list[float]:
    return [0.0 for _ in completions]


def _by_length(completions: list, **_: object) -> list[float]:
    """Distinct rewards for distinct completion lengths: random weights sample varied lengths."""
    return [float(len(str(c))) / 100 for c in completions]


def _phase(tmp_path: Path, tiny_model: Path, reward, name: str) -> dict:  # noqa: ANN001
    from cogr_search.training.grpo import train_grpo

    result = train_grpo(tiny_model, ROWS, reward, tmp_path / name, CONFIG, progress=False, use_vllm=False)
    assert result.steps == 2
    return result.as_dict()


def test_warning_fires_on_constant_rewards_and_the_report_marks_it(tmp_path: Path, tiny_model: Path) -> None:
    figures = _phase(tmp_path, tiny_model, _constant, "flat")
    assert figures["mean_reward"] == 0 and figures["zero_std_share"] == 1.0
    note = no_learning_note("query", figures, CONFIG.prompts_per_step)
    assert note is not None and "\n" not in note
    assert note.startswith("the query generator saw no reward differences in 4 of 4 groups")
    assert "nothing was learnt" in note and "--query-context bm25:5" in note and "temperature" in note
    space = {side: {"share_unigram": 1.0, "share_bigram": 0.0, "share_3+": 0.0, "vocabulary": 1}
             for side in ("query", "item")}
    entry = {"val": {"P": 0, "R": 0, "F1": 0, "queries": 1}, "train": {"F1": 0}, "keyword_space":
             {**space, "query_vocabulary_in_items": 1.0}, **figures}
    table = run_markdown("r", [{**entry, "phase": "sft", "mean_reward": None, "zero_std_share": None},
                               {**entry, "phase": "rl-query-1", "no_learning": note}])
    assert f"| rl-query-1{NOTHING_LEARNT} |" in table and f"| sft{NOTHING_LEARNT}" not in table
    assert note in table


def test_warning_is_silent_when_rewards_vary(tmp_path: Path, tiny_model: Path) -> None:
    figures = _phase(tmp_path, tiny_model, _by_length, "varied")
    assert figures["mean_reward"] > 0 and figures["zero_std_share"] <= 0.9
    assert no_learning_note("item", figures, CONFIG.prompts_per_step) is None
