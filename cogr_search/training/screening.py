"""Prompt screening before a GRPO phase: train only on prompts whose rollouts disagree.

Why: GRPO learns from the reward differences inside a group. A prompt whose rollouts
all earn the same reward (every query keyword set retrieves nothing relevant, say) has
zero advantage everywhere: its share of the step's generation and backward pass buys no
gradient. On CPU runs over real catalogs that was most of the compute (Home Depot:
58-75% of groups). trl 1.16 has no DAPO-style dynamic resampling (trl #3708), so this
is the offline form of it: the generator about to be trained rolls every candidate
prompt out `num_generations` times with the side's own rollout sampling, the same
frozen reward scores them, and only prompts whose rewards vary are handed to GRPO.

The record (`round-<r>/screen_<side>.json`: every candidate's rollouts and rewards, and
the kept ids) is written before training starts, so a resumed phase trains on exactly
the same prompts; they are never recomputed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.generators.backend import SamplingParams
from cogr_search.generators.backend_choice import load_backend
from cogr_search.runs.config import GenerationConfig, GRPOSideConfig
from cogr_search.runs.run_dir import atomic_write_json, read_json

SCREEN_FORMAT = 1


def rollout_params(config: GRPOSideConfig) -> SamplingParams:
    """The side's GRPO rollout sampling as generation settings (trl's top_k 0 is no cut)."""
    return SamplingParams(
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=config.top_k if config.top_k > 0 else -1,
        min_p=0.0,
        max_new_tokens=config.max_completion_length,
        seed=config.seed,
    )


def varied_groups(rewards: Sequence[float], group_size: int, tolerance: float = 1e-9) -> list[bool]:
    """For consecutive groups of `group_size` rewards: does the group carry a signal?"""
    if group_size < 2 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    groups = [rewards[k:k + group_size] for k in range(0, len(rewards), group_size)]
    return [max(g) - min(g) > tolerance for g in groups]


def screen_rows(
    model_path: Path,
    rows: Sequence[dict],
    id_column: str,
    reward: Callable[..., list[float]],
    config: GRPOSideConfig,
    generation: GenerationConfig,
    record: Path,
) -> tuple[list[dict], dict]:
    """The rows worth training on, and what the screening found (also kept in `record`).

    When no group varies at all, every row is kept: GRPO then behaves as unscreened,
    and the record says so (`kept_all`)."""
    if record.exists():
        return _rows_from_record(rows, id_column, record)
    group = config.num_generations
    start = time.perf_counter()
    conversations = [row["prompt"] for row in rows for _ in range(group)]
    with load_backend(model_path, generation.backend, dtype=generation.dtype) as engine:
        completions = engine.generate(conversations, rollout_params(config), batch_size=generation.batch_size)
    ids = [row[id_column] for row in rows for _ in range(group)]
    rewards = reward(completions=[c.text for c in completions], **{id_column: ids})
    varied = varied_groups(rewards, group)
    kept_all = not any(varied)
    kept = [row for row, v in zip(rows, varied) if v or kept_all]
    info = {
        "format": SCREEN_FORMAT,
        "candidates": len(rows),
        "kept": len(kept),
        "kept_all": kept_all,
        "zero_std_share": round(1 - sum(varied) / len(varied), 4),
        "mean_reward": round(sum(rewards) / len(rewards), 4),
        "rollouts": len(completions),
        "seconds": round(time.perf_counter() - start, 2),
        "ids": [row[id_column] for row in kept],
        "groups": [
            {"id": row[id_column], "rewards": [round(r, 6) for r in rewards[k * group:(k + 1) * group]],
             "completions": [c.text for c in completions[k * group:(k + 1) * group]]}
            for k, row in enumerate(rows)
        ],
    }
    atomic_write_json(record, info)
    return kept, _summary(info)


def _rows_from_record(rows: Sequence[dict], id_column: str, record: Path) -> tuple[list[dict], dict]:
    info = read_json(record)
    by_id = {row[id_column]: row for row in rows}
    missing = [i for i in info.get("ids", []) if i not in by_id]
    if missing:
        raise CogrError(f"{record}: screened id {missing[0]!r} is not among this phase's prompts")
    return [by_id[i] for i in info["ids"]], _summary(info)


def _summary(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in ("ids", "groups", "format")}
