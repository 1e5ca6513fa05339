"""`cogr-search demo`: the main job on the embedded default (see cogr_search/demo.py)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.cli.train_cmds import launched, processes_option
from cogr_search.demo import DemoOptions
from cogr_search.evaluation.significance import PairedTest
from cogr_search.evaluation.significance import format_p
from cogr_search.demo import run_demo


def _print_comparison(reports: list[dict], tests: Mapping[str, PairedTest]) -> None:
    """The held-out table, each row's F1 p-value against BM25 (the first row), and the
    hybrid-vs-BM25 test in words (the comparison a team decides on)."""
    keys = ["P", "R", "F1", "MRR@10", "NDCG@10", "P@10", "R@10", "R@100"]
    click.echo("\nHeld-out queries, OpenSearch:")
    click.echo(f"{'method':<10}" + "".join(f"{k:>9}" for k in keys) + f"{'queries':>9}{'p F1':>10}")
    for position, r in enumerate(reports):
        test = tests.get(r["method"])
        p_cell = "baseline" if position == 0 else (format_p(test.p_value) if test else "-")
        click.echo(f"{r['method']:<10}" + "".join(f"{r[k]:>9.3f}" for k in keys) + f"{r['queries']:>9}{p_cell:>10}")
    hybrid = tests.get("hybrid")
    if hybrid is not None:
        click.echo(hybrid.line())


def _print_phases(phases: list[dict]) -> None:
    if not phases:
        return
    click.echo("\nShadow index after each phase (P/R/F1 on held-out and training queries):")
    click.echo(f"{'phase':<12}{'val P':>8}{'val R':>8}{'val F1':>8}{'train F1':>10}{'reward':>9}")
    for p in phases:
        reward = "-" if p.get("mean_reward") is None else f"{p['mean_reward']:.3f}"
        click.echo(f"{p['phase']:<12}{p['val']['P']:>8.3f}{p['val']['R']:>8.3f}{p['val']['F1']:>8.3f}"
                   f"{p['train']['F1']:>10.3f}{reward:>9}")


def demo_options(index: str, run_name: str, runs_dir: Path | None, **flags: object) -> DemoOptions:
    """The demo's options from the command line (None: the `demo` preset's value)."""
    return DemoOptions(index=index, run=run_name, runs_dir=runs_dir, **flags)


@click.command()
@click.option("--index", default="cogr-demo", show_default=True, help="Alias for the sample catalog.")
@click.option("--run", "run_name", default="demo", show_default=True, help="Run directory name (resumes).")
@runs_dir
@click.option("--sft-steps", type=int, default=None, help="SFT optimizer steps per generator (default: the demo's).")
@click.option("--rl-rounds", type=int, default=None, help="Phase 2 rounds (default: 1; 0 skips RL).")
@click.option("--rl-steps", type=click.IntRange(min=1), default=None,
              help="GRPO steps per side and round (default: 8, the 15-minute budget; 48: held-out F1 rose, "
                   "0.225 -> 0.285, in 31 minutes; docs/training.md).")
@click.option("--query-context", default=None,
              help="bm25:K: the query prompt shows the titles of the query's top-K BM25 hits (bm25:5: better "
                   "CoGR, ~15 min instead of ~12) [default: none].")
@opensearch_url
@processes_option
@json_output
def demo(index: str, run_name: str, runs_dir: Path | None, sft_steps: int | None, rl_rounds: int | None,
         rl_steps: int | None, query_context: str | None, opensearch_url: str | None, processes: int,
         as_json: bool) -> None:
    """Local node + sample catalog + Phase 1 and one RL round on the CPU model + sync +
    BM25 vs CoGR (after SFT and after RL, and the round's distilled students) on the
    held-out queries, and one cold expansion by the student and by the LLM."""
    options = demo_options(index, run_name, runs_dir, sft_steps=sft_steps, rl_rounds=rl_rounds, rl_steps=rl_steps,
                           query_context=query_context)
    if launched(processes):
        return
    # The trainer prints its logs on stdout; keep stdout for the demo's own results.
    with contextlib.redirect_stdout(sys.stderr):
        result = run_demo(settings_from(opensearch_url=opensearch_url), options, echo=lambda line: click.echo(line, err=True))
    if result is None:  # a training rank other than 0: rank 0 reports
        return
    if as_json:
        emit_json(result.as_json())
        return
    _print_comparison([*result.reports, *([result.student["report"]] if result.student else []), result.hybrid],
                      result.tests)
    _print_phases(result.phases)
    ex = result.example
    click.echo(f"\nquery {ex['query']!r} -> keywords {ex['keywords']}  ({ex['retrieved']} items retrieved)")
    for hit in ex["hits"]:
        mark = "*" if hit["relevant"] else " "
        click.echo(f"  {mark} {hit['title']}  [matched: {', '.join(hit['matched'])}]")
    if result.student:
        st = result.student
        click.echo(f"\ncold expansion of {st['query']!r}: student {st['student']['cold_ms']:.2f} ms "
                   f"-> {st['student']['keywords']}; LLM {st['llm']['cold_ms']:.0f} ms -> {st['llm']['keywords']}")
    click.echo(f"\nreport: {result.report_path}   run: {result.run}   index: {result.index} at {result.url}")
    click.echo("note: each CoGR row scores one sample of query keywords against one sample of item keywords; on\n"
               "40 queries one sample moves F1 by up to +-0.05, as much as 8-12 GRPO steps a side do (--rl-steps 48\n"
               "shows more). Compare phases by the mean over samples:\n"
               f"cogr-search train metrics --run {result.run} --eval-samples 4 --item-samples 3")
