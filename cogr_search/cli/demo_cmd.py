"""`cogr-search demo`: the main job on the embedded default (see cogr_search/demo.py)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from cogr_search.cli.options import opensearch_url, settings_from


def _print_comparison(reports: list[dict]) -> None:
    keys = ["P", "R", "F1", "MRR@10", "NDCG@10", "P@10", "R@10", "R@100"]
    click.echo("")
    click.echo(f"{'method':<8}" + "".join(f"{k:>9}" for k in keys) + f"{'queries':>9}")
    for r in reports:
        click.echo(f"{r['method']:<8}" + "".join(f"{r[k]:>9.3f}" for k in keys) + f"{r['queries']:>9}")


@click.command()
@click.option("--index", default="cogr-demo", show_default=True, help="Alias for the sample catalog.")
@click.option("--run", "run_name", default="demo", show_default=True, help="Run directory name (resumes).")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None, envvar="COGR_RUNS_DIR")
@click.option("--sft-steps", type=int, default=40, show_default=True, help="SFT optimizer steps per generator.")
@opensearch_url
def demo(index: str, run_name: str, runs_dir: Path | None, sft_steps: int, opensearch_url: str | None) -> None:
    """Local node + sample catalog + Phase 1 on the CPU model + sync + BM25 vs CoGR."""
    from cogr_search.demo import DemoOptions, run_demo

    options = DemoOptions(index=index, run=run_name, runs_dir=runs_dir, sft_steps=sft_steps)
    # The trainer prints its logs on stdout; keep stdout for the demo's own results.
    with contextlib.redirect_stdout(sys.stderr):
        result = run_demo(settings_from(opensearch_url=opensearch_url), options, echo=lambda line: click.echo(line, err=True))
    _print_comparison(result.reports)
    ex = result.example
    click.echo(f"\nquery {ex['query']!r} -> keywords {ex['keywords']}  ({ex['retrieved']} items retrieved)")
    for hit in ex["hits"]:
        mark = "*" if hit["relevant"] else " "
        click.echo(f"  {mark} {hit['title']}  [matched: {', '.join(hit['matched'])}]")
    click.echo(f"\nreport: {result.report_path}   run: {result.run}   index: {result.index} at {result.url}")
