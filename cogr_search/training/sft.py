"""Supervised fine-tuning of one keyword generator with trl's `SFTTrainer`.

Examples are conversational prompt-completion pairs (the same chat messages the
generator sees at inference, and the keyword list as the assistant turn), so trl
computes the loss on the completion only and the model learns to end its turn.

Crash safety and saving are shared with GRPO (`checkpoints.py`): checkpoints every
`save_steps` in `<out>.work/`, resumed on a re-run; the final folder appears atomically.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.generators.prompts import Message
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
from cogr_search.runs.config import SFTConfig
from cogr_search.ranks import Ranks, per_device_batch


@dataclass(frozen=True)
class SFTExample:
    prompt: list[Message]
    completion: str


@dataclass
class SFTResult:
    steps: int
    examples: int
    seconds: float
    train_loss: float | None
    losses: list[float] = field(default_factory=list)
    resumed_from: str | None = None
    rank_weights_sha256: list[str] = field(default_factory=list)  # each rank's trained weights (state_digest)

    def as_dict(self) -> dict:
        return {
            "steps": self.steps,
            "examples": self.examples,
            "seconds": round(self.seconds, 2),
            "train_loss": self.train_loss,
            "first_loss": self.losses[0] if self.losses else None,
            "last_loss": self.losses[-1] if self.losses else None,
            "resumed_from": self.resumed_from,
            "rank_weights_sha256": self.rank_weights_sha256,
        }


def train_sft(
    model_path: Path,
    examples: Sequence[SFTExample],
    out_dir: Path,
    config: SFTConfig,
    progress: bool = True,
    callbacks: Sequence[object] = (),
    ranks: Ranks | None = None,
    log_path: Path | None = None,
) -> SFTResult:
    """Fine-tune the model at `model_path` on `examples` and save it to `out_dir`.

    `callbacks` are transformers `TrainerCallback`s (progress hooks, tests). Under
    several `ranks` (the launcher's processes) the trainer is data-parallel with the
    single-process run's effective batch, and rank 0 alone saves. The trainer's log
    entries go to `log_path` (the run's train.log), never the terminal."""
    ranks = ranks or Ranks()
    if not examples:
        raise CogrError(f"SFT for {out_dir}: no training examples")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch  # heavy: torch, off the CLI's start
    from datasets import Dataset as HFDataset  # heavy: datasets, pandas, off the CLI's start
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers, off the CLI's start
    from trl import SFTConfig as TrlSFTConfig  # heavy: trl, off the CLI's start
    from trl import SFTTrainer  # heavy: trl, off the CLI's start

    from cogr_search.training.trainer_log import route_trainer_logs  # heavy: torch, transformers, off the CLI's start

    configure_torch_threads()
    work_dir = work_dir_for(out_dir)
    on_gpu = torch.cuda.is_available()
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32)
    freeze_lower_layers(model, None if config.lora else config.train_layers)
    dataset = HFDataset.from_list(
        [{"prompt": ex.prompt, "completion": [{"role": "assistant", "content": ex.completion}]} for ex in examples]
    )
    batch, accumulation = per_device_batch(config.batch_size, config.gradient_accumulation_steps, ranks.world,
                                           f"SFT of {out_dir.name} (sft.batch_size, sft.gradient_accumulation_steps)")
    args = TrlSFTConfig(
        use_cpu=not on_gpu,
        bf16=bf16_training(config.precision),
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=accumulation,
        ddp_find_unused_parameters=False,  # frozen blocks do not require grad; nothing else goes unused
        learning_rate=config.learning_rate,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        max_length=config.max_length,
        warmup_steps=config.warmup_ratio,  # a float < 1 is a ratio in transformers 5
        lr_scheduler_type=config.lr_scheduler,
        weight_decay=config.weight_decay,
        activation_checkpointing=config.activation_checkpointing,
        logging_steps=config.logging_steps,
        **trainer_io_args(work_dir, config.save_steps, config.seed, progress),
    )
    peft_config = lora_config(config, model) if config.lora else None
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config,
        callbacks=list(callbacks) or None,
    )
    route_trainer_logs(trainer, log_path, f"sft {out_dir.parent.name}/{out_dir.name}")
    checkpoint = ranks.broadcast(latest_checkpoint(work_dir))  # rank 0's view: the one it wrote
    start = time.perf_counter()
    output = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    seconds = time.perf_counter() - start
    losses = [float(entry["loss"]) for entry in trainer.state.log_history if "loss" in entry]
    digests = finish_training(trainer, tokenizer, out_dir, work_dir, config.lora, ranks)
    return SFTResult(
        steps=int(trainer.state.global_step),
        examples=len(examples),
        seconds=seconds,
        train_loss=float(output.training_loss) if output.training_loss is not None else None,
        losses=losses,
        resumed_from=checkpoint.name if checkpoint else None,
        rank_weights_sha256=digests,
    )
