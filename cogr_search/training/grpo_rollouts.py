"""GRPO rollouts that do not depend on the number of processes (transformers generation).

Why: trl's transformers path samples a rank's whole share of completions in one
`generate` call from the global random stream. With one process that stream runs over
every group of the step; with N, each rank starts from the same seed on other prompts,
so the completions, their rewards and so the gradients differ from a single process's:
N processes would train another model, not the same one faster. Here each group (the
`num_generations` completions of one prompt) is generated as a batch of its own, from a
stream seeded by the run's seed, the optimizer step and the prompt's tokens: a group's
completions are the same on whichever rank it lands, and its batch (G copies of one
prompt, no padding) is the same too, so not even the arithmetic changes.

This holds while every rank's share holds whole groups: the per-device batch
(`prompts_per_step x num_generations / N`) a multiple of `num_generations`, i.e.
`prompts_per_step` a multiple of N, or the gradient accumulation split instead. vLLM
rollouts, continuous batching and image prompts go through trl unchanged.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence


def group_seed(seed: int, step: int, prompt_ids: Sequence[int]) -> int:
    """The sampling seed of one group: the run's seed, the optimizer step and the prompt's
    token ids, nothing about the rank or the batch. (Two rows with the same prompt in one
    step sample the same group, with one process as with N.)"""
    digest = hashlib.blake2b(f"{seed}\0{step}\0{','.join(map(str, prompt_ids))}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") & (2**63 - 1)


def groups(prompt_ids: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """(start, end) of each run of equal consecutive prompts: trl repeats a prompt
    `num_generations` times in a row, so a run is a group (or the part of one a rank holds)."""
    runs: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(prompt_ids) + 1):
        if index == len(prompt_ids) or list(prompt_ids[index]) != list(prompt_ids[start]):
            runs.append((start, index))
            start = index
    return runs


@functools.cache
def rank_invariant_trainer():  # noqa: ANN201 - a GRPOTrainer subclass, built on first use (trl imports slowly)
    """trl's `GRPOTrainer` whose transformers rollouts are sampled group by group."""
    import torch  # heavy: torch, off the CLI's start
    from trl import GRPOTrainer  # heavy: trl, off the CLI's start

    class RankInvariantGRPOTrainer(GRPOTrainer):
        """`GRPOTrainer` with rollouts independent of the number of processes (module doc)."""

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations,  # noqa: ANN001, ANN202
                                  has_tool_images=False):
            plain = not (self.use_vllm or self.use_transformers_continuous_batching or multimodal_fields
                         or (images is not None and any(images)))
            if not plain:
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     has_tool_images)
            completions: list = []
            devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
            for start, end in groups(prompt_ids):
                with torch.random.fork_rng(devices=devices):
                    torch.manual_seed(group_seed(self.args.seed, self.state.global_step, prompt_ids[start]))
                    ids, _ = super()._generate_single_turn(prompt_ids[start:end], images, multimodal_fields,
                                                           num_generations, has_tool_images)
                completions.extend(ids)
            return completions, None

    return RankInvariantGRPOTrainer
