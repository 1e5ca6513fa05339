"""What SFT and GRPO share about trainer folders: resuming and saving checkpoints.

Both trainers write checkpoints into `<out>.work/` every `save_steps`; a re-run resumes
from the newest complete one. The final model is saved into a staging folder and
renamed to `<out>/`, so a generator folder is either complete or absent. LoRA adapters
are merged before saving: every saved generator is a plain causal LM folder that any
backend (transformers, vLLM) loads without peft.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from cogr_search.generators.hf_backend import cpu_has_fast_bf16
from cogr_search.errors import CogrError


def work_dir_for(out_dir: Path) -> Path:
    """Where the trainer keeps its resumable checkpoints for `out_dir`."""
    return out_dir.with_name(out_dir.name + ".work")


def trainer_io_args(work_dir: Path, save_steps: int, seed: int, progress: bool) -> dict:
    """The TrainingArguments both trainers share: where and how often checkpoints go
    (one kept: enough to resume), no reporting integrations, no dataloader workers."""
    return {
        "output_dir": str(work_dir),
        "save_strategy": "steps",
        "save_steps": save_steps,
        "save_total_limit": 1,
        "report_to": [],
        "seed": seed,
        "disable_tqdm": not progress,
        "dataloader_num_workers": 0,
    }


def latest_checkpoint(work_dir: Path) -> Path | None:
    """The trainer's newest `checkpoint-<step>` folder, if a previous attempt left one."""
    if not work_dir.is_dir():
        return None
    checkpoints = [p for p in work_dir.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    complete = [p for p in checkpoints if (p / "trainer_state.json").is_file()]
    return max(complete, key=lambda p: int(p.name.split("-")[-1]), default=None)


def bf16_training(precision: str) -> bool:
    """Whether a trainer computes in bf16 mixed precision (float32 master weights).

    Why `auto` turns it on for CPUs too: on a CPU with native bf16 dot products
    (AVX512-BF16, AMX) a forward and backward pass of the 135M model runs about 1.7x
    faster under bf16 autocast than in float32 (benchmarks/rl.md), the same gain the
    generation backend's `auto` dtype takes; elsewhere bf16 would be emulated and slower.
    """
    if precision == "fp32":
        return False
    if precision == "bf16":
        return True
    import torch  # heavy: torch, off the CLI's start

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()

    return cpu_has_fast_bf16()


def lora_config(config: object, model: object):  # noqa: ANN201 - peft type
    """Adapters on every linear layer of the top `config.lora_layers` decoder blocks (0:
    of every block), for either trainer's config (`SFTConfig`, `GRPOSideConfig`).

    Why the cap: with adapters in the lowest block the backward pass runs through all of
    them; with adapters in the top N it stops there, as `train_layers` does for full
    fine-tuning (benchmarks/rl.md: a GRPO step with adapters in all 30 blocks costs
    1.2-1.5x one with adapters in the top 8, but the item side learned less there).
    """
    from peft import LoraConfig  # heavy: torch, transformers, off the CLI's start

    common = {"r": config.lora_r, "lora_alpha": config.lora_alpha, "lora_dropout": config.lora_dropout,
              "task_type": "CAUSAL_LM"}
    if not config.lora_layers:
        return LoraConfig(target_modules="all-linear", **common)
    import torch  # heavy: torch, off the CLI's start

    blocks = _decoder_layers(model)
    # peft takes a block range only with named modules: the linear layers of a block
    linear = sorted({name.rsplit(".", 1)[-1] for name, module in blocks[0].named_modules()
                     if isinstance(module, torch.nn.Linear)})
    top = list(range(max(0, len(blocks) - config.lora_layers), len(blocks)))
    return LoraConfig(target_modules=linear, layers_to_transform=top, layers_pattern="layers", **common)


def save_generator(model: object, tokenizer: object, out_dir: Path, merge_lora: bool) -> None:
    """Save a trained model (adapters merged) as a complete folder, atomically."""
    if merge_lora:
        model = model.merge_and_unload()
    staging = out_dir.with_name(f".{out_dir.name}.saving")
    shutil.rmtree(staging, ignore_errors=True)
    model.config.use_cache = True  # training turns the cache off; generation wants it
    if tokenizer.pad_token_id is not None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(str(staging))
    tokenizer.save_pretrained(str(staging))
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.replace(staging, out_dir)


def finish_training(trainer: object, tokenizer: object, out_dir: Path, work_dir: Path, merge_lora: bool,
                    ranks: object) -> list[str]:
    """Save the trained generator and drop the trainer's checkpoints: rank 0 alone
    writes (the weights are the same on every rank), the others wait until it has.

    Returns every rank's `state_digest` of its trained weights, by rank, taken before
    rank 0 merges adapters: the manifest records them, so "the same on every rank" is a
    recorded fact of each run rather than an assumption."""
    digests = ranks.gather(state_digest(trainer.model))
    if ranks.is_main:
        save_generator(trainer.model, tokenizer, out_dir, merge_lora=merge_lora)
        shutil.rmtree(work_dir, ignore_errors=True)
    ranks.barrier()
    return digests


def state_digest(model: object) -> str:
    """sha256 over a model's state dict: each tensor's name, dtype, shape and bytes, in
    name order. Unlike `weights_digest` (the saved files) it reads the weights in memory,
    on any rank, with no file written."""
    import torch  # heavy: torch, off the CLI's start

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        data = tensor.detach().cpu().contiguous()
        digest.update(f"{name}\0{data.dtype}\0{tuple(data.shape)}\0".encode())
        digest.update(data.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def freeze_lower_layers(model: object, train_layers: int | None) -> int:
    """Let only the top `train_layers` decoder blocks (and the final norm) learn.

    Why: on a CPU the backward pass is two thirds of a training step; with the lower
    blocks and the (tied) embeddings frozen, autograd stops at the first trainable
    block. Returns the number of trainable parameters. None or 0 trains everything.
    """
    if not train_layers:
        return sum(p.numel() for p in model.parameters() if p.requires_grad)
    layers = _decoder_layers(model)
    keep = set(range(max(0, len(layers) - train_layers), len(layers)))
    for param in model.parameters():
        param.requires_grad_(False)
    for index in keep:
        for param in layers[index].parameters():
            param.requires_grad_(True)
    norm = getattr(getattr(model, "model", model), "norm", None)
    if norm is not None:
        for param in norm.parameters():
            param.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _decoder_layers(model: object) -> list:
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise CogrError(f"{type(model).__name__}: no decoder layers found (model.model.layers); use train_layers 0")
    return list(layers)
