"""`cogr-search bench rl`: how fast GRPO steps run on this machine, and what share of a
step the shadow index's rewards cost.

Runs a few real GRPO steps of each side of round 1 of a Phase 1 run (the demo's by
default), with the run's own prompts, frozen indexes and rewards, into a throwaway
folder: nothing in the run changes. Step times come from the trainer's step-end
callbacks (the first step, which pays for warm-up, is left out of the median);
`reward_time_share` is the rewards' own seconds over the measured steps' seconds.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from cogr_search.bench.step_timer import step_seconds, step_timer
from cogr_search.generators.threads import configure_torch_threads
from cogr_search.runs.config import GRPOSideConfig, Phase2Config
from cogr_search.progress import progress_bar
from cogr_search.runs.run_dir import RunDir
from cogr_search.training.checkpoints import bf16_training
from cogr_search.training.grpo import train_grpo
from cogr_search.training.phase2 import item_side, open_context, query_side


def _measure_side(ctx, side: str, config: GRPOSideConfig, out: Path, progress: bool) -> dict:  # noqa: ANN001
    # round 1 of the run: the query side against round 0's items, the item side against
    # round 0's query keywords (standing in for the ones round 1's query phase would write)
    rows, reward = query_side(ctx, 1) if side == "query" else item_side(ctx, 1, query_round=0)
    bar = progress_bar(config.max_steps, f"bench rl: {side} side", "step", progress)
    timer = step_timer(bar)
    reward_marks: list[float] = []
    inner = reward.__call__

    def timed_reward(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - trl's call
        values = inner(*args, **kwargs)
        reward_marks.append(reward.seconds)
        return values

    timed_reward.__name__ = reward.__name__
    trained = train_grpo(ctx.run.checkpoint_path(0, side), rows, timed_reward, out / side, config, progress=False,
                         callbacks=[timer])
    bar.close()
    measured = step_seconds(timer)
    reward_seconds = (reward_marks[-1] - reward_marks[0]) if len(reward_marks) > 1 else reward.seconds
    completions_per_step = config.prompts_per_step * config.num_generations * config.gradient_accumulation_steps
    step_s = statistics.median(measured)
    return {
        "grpo_step_s": round(step_s, 3),
        "steps_per_s": round(1 / step_s, 4),
        "completions_per_s": round(completions_per_step / step_s, 3),
        "reward_time_share": round(reward_seconds / sum(measured), 6) if sum(measured) else 0.0,
        "reward_ms_per_completion": round(1000 * reward.seconds / max(1, reward.completions), 4),
        "steps_measured": len(measured),
        "trainable_parameters": trained.trainable_parameters,
        "prompts": len(rows),
    }


def run(run_name: str, runs_dir: Path | None, steps: int, config: GRPOSideConfig, progress: bool = False) -> dict:
    """GRPO speed of both sides on the run's data (round 1 against the round-0 indexes)."""
    run_dir = RunDir.open(run_name, runs_dir)
    run_dir.require_round(0)
    threads = configure_torch_threads()
    side_config = config.model_copy(update={"max_steps": steps, "save_steps": 10_000})
    ctx = open_context(run_dir, Phase2Config(query=side_config, item=side_config))
    with tempfile.TemporaryDirectory(prefix="cogr-bench-rl-") as tmp:
        result = {side: _measure_side(ctx, side, side_config, Path(tmp), progress) for side in ("query", "item")}
    return {
        "run": str(run_dir.root),
        "threads": threads,
        "steps": steps,
        "num_generations": side_config.num_generations,
        "prompts_per_step": side_config.prompts_per_step,
        "max_completion_length": side_config.max_completion_length,
        "lora": side_config.lora,
        "lora_layers": side_config.lora_layers if side_config.lora else None,
        "train_layers": None if side_config.lora else side_config.train_layers,
        "precision": side_config.precision,
        "bf16": bf16_training(side_config.precision),
        **{f"{side}_{key}": value for side, figures in result.items() for key, value in figures.items()},
    }
