"""`cogr-search bench rl`: how fast GRPO steps run on this machine, and what share of a
step the shadow index's rewards cost.

Runs a few real GRPO steps of each side of round 1 of a Phase 1 run (the demo's by
default), with the run's own prompts, frozen indexes and rewards, into a throwaway
folder: nothing in the run changes. Step times come from the trainer's step-end
callbacks (the first step, which pays for warm-up, is left out of the median);
`reward_time_share` is the rewards' own seconds over the measured steps' seconds.

With several backends (`--backend transformers,vllm`) each side runs once per rollout
engine, back to back on the same prompts and seed, and the result holds one entry per
backend and side. `rollout_s` is trl's generation call per step (with vLLM: the weight
sync into the engine, `weight_sync_s`, and the repack of its CPU kernels, `repack_s`,
included), medians over the steps after the first.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from cogr_search.bench.step_timer import step_seconds, step_timer
from cogr_search.generators.threads import configure_torch_threads
from cogr_search.runs.config import GRPOSideConfig, Phase2Config
from cogr_search.progress import progress_bar
from cogr_search.runs.run_dir import RunDir
from cogr_search.training.checkpoints import bf16_training
import os
from cogr_search.training import vllm_rollouts
from cogr_search.training.grpo import corrects_engine_mismatch, rollout_backend, train_grpo
from cogr_search.training.phase2 import item_side, open_context, query_side
from cogr_search.bench.generate import speedups


@contextlib.contextmanager
def phase_timers() -> Iterator[dict[str, list[float]]]:
    """Seconds of each call of trl's rollout (`GRPOTrainer._generate`), of its weight sync
    into a colocated vLLM engine and of the CPU engine's repack, while the block runs."""
    from trl import GRPOTrainer  # heavy: trl, off the CLI's start


    marks: dict[str, list[float]] = {"rollout": [], "weight_sync": [], "repack": []}
    targets: list[tuple[object, str, str]] = [(GRPOTrainer, "_generate", "rollout"), (vllm_rollouts, "repack", "repack")]
    with contextlib.suppress(ImportError):  # trl's vLLM module imports vllm
        from trl.generation.vllm_generation import VLLMGeneration  # heavy: torch, transformers, off the CLI's start

        targets.append((VLLMGeneration, "sync_weights", "weight_sync"))
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]

    def timed(function, key):  # noqa: ANN001, ANN202
        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                marks[key].append(time.perf_counter() - start)

        return wrapper

    for (owner, name, key), (_, _, original) in zip(targets, saved):
        setattr(owner, name, timed(original, key))
    try:
        yield marks
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _median_after_first(values: list[float]) -> float | None:
    kept = values[1:] or values
    return round(statistics.median(kept), 3) if kept else None


def _measure_side(ctx, side: str, config: GRPOSideConfig, out: Path, progress: bool,  # noqa: ANN001
                  backend: str = "auto") -> dict:

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
    with phase_timers() as phases:
        trained = train_grpo(ctx.run.checkpoint_path(0, side), rows, timed_reward, out / side, config,
                             progress=False, callbacks=[timer], backend=backend)
    bar.close()
    measured = step_seconds(timer)
    rollout_s = _median_after_first(phases["rollout"])
    reward_seconds = (reward_marks[-1] - reward_marks[0]) if len(reward_marks) > 1 else reward.seconds
    completions_per_step = config.prompts_per_step * config.num_generations * config.gradient_accumulation_steps
    step_s = statistics.median(measured)
    return {
        "grpo_step_s": round(step_s, 3),
        "steps_per_s": round(1 / step_s, 4),
        "completions_per_s": round(completions_per_step / step_s, 3),
        "reward_time_share": round(reward_seconds / sum(measured), 6) if sum(measured) else 0.0,
        "reward_ms_per_completion": round(1000 * reward.seconds / max(1, reward.completions), 4),
        "rollout_s": rollout_s,
        "rollout_time_share": round(rollout_s / step_s, 3) if rollout_s is not None and step_s else None,
        "weight_sync_s": _median_after_first(phases["weight_sync"]),
        "repack_s": _median_after_first(phases["repack"]),
        "used_vllm": trained.used_vllm,
        "steps_measured": len(measured),
        "trainable_parameters": trained.trainable_parameters,
        "prompts": len(rows),
    }


def run(run_name: str, runs_dir: Path | None, steps: int, config: GRPOSideConfig, progress: bool = False,
        backends: Sequence[str] = ("auto",)) -> dict:
    """GRPO speed of both sides on the run's data (round 1 against the round-0 indexes),
    with each rollout engine of `backends` in turn (`rollout_backend`), one entry per
    backend and side in `results`. With one backend the figures also appear flat
    (`query_grpo_step_s`, ...), as before the side-by-side form."""

    run_dir = RunDir.open(run_name, runs_dir)
    run_dir.require_round(0)
    engines = [rollout_backend(backend, config) for backend in backends]
    threads = configure_torch_threads()
    side_config = config.model_copy(update={"max_steps": steps, "save_steps": 10_000})
    ctx = open_context(run_dir, Phase2Config(query=side_config, item=side_config))
    results: list[dict] = []
    load: list[float] = []
    with tempfile.TemporaryDirectory(prefix="cogr-bench-rl-") as tmp:
        for side in ("query", "item"):
            for engine in engines:  # back to back on the same prompts, seed and starting weights
                load.append(os.getloadavg()[0])
                figures = _measure_side(ctx, side, side_config, Path(tmp) / engine, progress, engine)
                results.append({"backend": engine, "side": side, **figures})
    flat = {f"{entry['side']}_{key}": value for entry in results for key, value in entry.items()
            if key not in ("backend", "side")} if len(engines) == 1 else {}
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
        "sampling": {"temperature": side_config.temperature, "top_p": side_config.top_p, "top_k": side_config.top_k},
        # with vLLM, trl's correction costs a forward pass of the completions a step
        "importance_correction": corrects_engine_mismatch(side_config),
        "backends": engines,
        "load_avg_1m": [round(min(load), 2), round(max(load), 2)],
        "results": results,
        **speedups(results, "completions_per_s"),
        **flat,
    }
