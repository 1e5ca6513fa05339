"""One GRPO phase for one generator with trl's `GRPOTrainer` (paper section 2.3).

The caller hands over the prompts (chat messages plus the id column its reward reads)
and a reward function in trl's shape (`rewards.py`); this module owns the trainer
settings: no KL term and no reference model (paper Table 6), the rollout sampling of
Table 5 (temperature 1, no top-p/top-k cut), CPU-friendly defaults (float32 weights,
bf16 autocast where the CPU has native bf16, no gradient checkpointing), and the same
checkpoint/resume/atomic-save behaviour as SFT (`checkpoints.py`). On a GPU with the `gpu` extra, rollouts run on vLLM (colocated).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.generators.backend_choice import resolve_backend
from cogr_search.generators.threads import configure_torch_threads
from cogr_search.training.checkpoints import (
    bf16_training,
    freeze_lower_layers,
    latest_checkpoint,
    lora_config,
    finish_training,
    trainer_io_args,
    work_dir_for,
)
from cogr_search.runs.config import GRPOSideConfig
from cogr_search.ranks import Ranks, per_device_batch
from cogr_search.training.grpo_rollouts import rank_invariant_trainer
from cogr_search.training.vllm_rollouts import close_rollout_engine, prepare_cpu_rollouts, repack_after_each_sync
from cogr_search.generators.vllm_backend import restore_environ


@dataclass
class GRPOResult:
    """What one phase did, from the trainer's log (one entry per optimizer step)."""

    steps: int
    prompts: int
    seconds: float
    rewards: list[float] = field(default_factory=list)
    zero_std_shares: list[float] = field(default_factory=list)
    clipped_ratios: list[float] = field(default_factory=list)
    trainable_parameters: int = 0
    used_vllm: bool = False
    resumed_from: str | None = None
    rank_weights_sha256: list[str] = field(default_factory=list)  # each rank's trained weights (state_digest)
    importance_ratios: list[float] = field(default_factory=list)  # trl's vLLM correction, per step, where on

    def as_dict(self) -> dict:
        def mean(values: list[float]) -> float | None:
            return round(sum(values) / len(values), 4) if values else None

        return {
            "steps": self.steps,
            "prompts": self.prompts,
            "seconds": round(self.seconds, 2),
            "mean_reward": mean(self.rewards),
            "first_reward": round(self.rewards[0], 4) if self.rewards else None,
            "last_reward": round(self.rewards[-1], 4) if self.rewards else None,
            "zero_std_share": mean(self.zero_std_shares),
            "clipped_ratio": mean(self.clipped_ratios),
            "trainable_parameters": self.trainable_parameters,
            "used_vllm": self.used_vllm,
            "resumed_from": self.resumed_from,
            "rank_weights_sha256": self.rank_weights_sha256,
            "importance_ratio": mean(self.importance_ratios),
        }


IMPORTANCE_RATIO = "sampling/importance_sampling_ratio/mean"
"""trl's log key for the mean weight its vLLM correction gave a step's rollouts: far below 1,
the rollouts barely move the weights (the manifest keeps it as `importance_ratio`)."""


def corrects_engine_mismatch(config: GRPOSideConfig) -> bool:
    """Whether trl's importance-sampling correction of vLLM rollouts stays on.

    trl weighs each rollout by exp(sum of trainer logprob - vLLM logprob) to undo the
    numeric gap between the two engines. The trainer's logprobs cover the whole vocabulary
    (temperature only); vLLM's `processed_logprobs` come after top-k/top-p, renormalised
    over the kept tokens. Under a cut the ratio therefore measures the cut, not the
    engines: in the demo preset's round-1 query phase (top-p 0.8, top-k 20, 40 tokens) it
    averaged 0.08 (median gradient norm 0.017, against 0.33 without it; docs/training.md),
    while transformers rollouts sample the same cut distribution with no correction. Without a cut (the
    paper's Table 5 sampling) the ratio is the engines' gap alone, and the correction stays.
    """
    return config.top_p >= 1.0 and config.top_k == 0


def rollout_backend(backend: str, config: GRPOSideConfig) -> str:
    """The engine GRPO's rollouts run on for `--backend` (`resolve_backend`): `auto` weighs
    whether trl's importance correction would run with LoRA (`vllm_is_faster_here`)."""
    return resolve_backend(backend, job="rollouts", corrected_lora=config.lora and corrects_engine_mismatch(config))


def train_grpo(
    model_path: Path,
    rows: Sequence[dict],
    reward: Callable[..., list[float]],
    out_dir: Path,
    config: GRPOSideConfig,
    progress: bool = True,
    callbacks: Sequence[object] = (),
    use_vllm: bool | None = None,
    ranks: Ranks | None = None,
    log_path: Path | None = None,
    backend: str = "auto",
) -> GRPOResult:
    """GRPO-train the generator at `model_path` on `rows` and save it to `out_dir`.

    `rows` are `{"prompt": [chat messages], <id column>: ...}`; every column except
    `prompt` reaches `reward` by name. Rollouts run on `backend` (`auto`: vLLM where it is
    installed and faster, `resolve_backend`), colocated; `use_vllm` overrides it.
    Under several `ranks` each process rolls out and rewards its share of every step's
    completions (one colocated vLLM per rank), with the single-process run's effective
    batch; rank 0 alone saves. The trainer's log entries go to `log_path` (the run's
    train.log), never the terminal.
    """
    ranks = ranks or Ranks()
    if not rows:
        raise CogrError(f"GRPO for {out_dir}: no training prompts")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch  # heavy: torch, off the CLI's start
    from datasets import Dataset as HFDataset  # heavy: datasets, pandas, off the CLI's start
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers, off the CLI's start
    from trl import GRPOConfig  # heavy: trl, off the CLI's start


    from cogr_search.training.trainer_log import route_trainer_logs  # heavy: torch, transformers, off the CLI's start

    configure_torch_threads()
    on_gpu = torch.cuda.is_available()
    vllm = rollout_backend(backend, config) == "vllm" if use_vllm is None else use_vllm
    environ = dict(os.environ)  # put back after the rollout engine is closed (restore_environ)
    if vllm and not on_gpu:
        prepare_cpu_rollouts()
    work_dir = work_dir_for(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    bf16 = bf16_training(config.precision)
    # a GPU holds the weights in bf16 (as before); a CPU keeps float32 weights under autocast
    model = AutoModelForCausalLM.from_pretrained(
        str(model_path), dtype=torch.bfloat16 if bf16 and on_gpu else torch.float32
    )
    freeze_lower_layers(model, None if config.lora else config.train_layers)
    batch, accumulation = per_device_batch(
        config.prompts_per_step * config.num_generations, config.gradient_accumulation_steps, ranks.world,
        f"GRPO of {out_dir.name} (prompts_per_step x num_generations, gradient_accumulation_steps)")
    args = GRPOConfig(
        use_cpu=not on_gpu,
        bf16=bf16,
        activation_checkpointing=False,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=accumulation,
        ddp_find_unused_parameters=False,  # frozen blocks do not require grad; nothing else goes unused
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=config.top_k,
        beta=0.0,
        learning_rate=config.learning_rate,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        loss_type=config.loss_type,
        scale_rewards=config.scale_rewards,
        use_vllm=vllm,
        vllm_mode="colocate",
        vllm_importance_sampling_correction=vllm and corrects_engine_mismatch(config),
        logging_steps=1,
        **trainer_io_args(work_dir, config.save_steps, config.seed, progress),
    )
    peft_config = lora_config(config, model) if config.lora else None
    trainer = rank_invariant_trainer()(  # trl's GRPOTrainer, rollouts independent of N (grpo_rollouts.py)
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=HFDataset.from_list(list(rows)),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=list(callbacks) or None,
    )
    if vllm and not on_gpu:
        repack_after_each_sync(trainer)
    route_trainer_logs(trainer, log_path, f"grpo {out_dir.parent.name}/{out_dir.name}")
    # counted on the trainer's model: with LoRA only the adapters are trainable
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    checkpoint = ranks.broadcast(latest_checkpoint(work_dir))  # rank 0's view: the one it wrote
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    seconds = time.perf_counter() - start
    if vllm and not on_gpu:
        close_rollout_engine(trainer)
        restore_environ(environ)
    log = [entry for entry in trainer.state.log_history if "reward" in entry]
    digests = finish_training(trainer, tokenizer, out_dir, work_dir, config.lora, ranks)
    return GRPOResult(
        steps=int(trainer.state.global_step),
        prompts=len(rows),
        seconds=seconds,
        rewards=[float(e["reward"]) for e in log],
        zero_std_shares=[float(e["frac_reward_zero_std"]) for e in log if "frac_reward_zero_std" in e],
        clipped_ratios=[float(e["completions/clipped_ratio"]) for e in log if "completions/clipped_ratio" in e],
        trainable_parameters=trainable,
        used_vllm=vllm,
        resumed_from=checkpoint.name if checkpoint else None,
        rank_weights_sha256=digests,
        importance_ratios=[float(e[IMPORTANCE_RATIO]) for e in log if IMPORTANCE_RATIO in e],
    )
