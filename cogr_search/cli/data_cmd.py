"""`cogr-search data subset`: a smaller real data set (seeded queries + their judged items,
or a training run's catalog)."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, runs_dir
from cogr_search.workflows.data_subsets import write_subset


@click.group()
def data() -> None:
    """Tools for relevance data sets."""


@data.command("subset")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--queries", "n_queries", type=int, default=None,
              help="Queries to keep (seeded sample of those with a relevant item), with every item judged for them.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--run", default=None,
              help="Instead of --queries: the catalog RUN trained on (its split.json items), every query, for "
                   "BM25 on the same items (`eval --data SOURCE --run RUN`).")
@runs_dir
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for the BEIR files.")
@json_output
def subset(source: Path, n_queries: int | None, seed: int, run: str | None, runs_dir: Path | None, out: Path,
           as_json: bool) -> None:
    """Write a subset of SOURCE to OUT (BEIR layout): N seeded queries and every item judged
    for them, or a run's catalog."""
    summary = write_subset(source, out, n_queries, seed, run, runs_dir)
    if as_json:
        emit_json(summary)
        return
    click.echo(f"{out}: {summary['queries']} queries, {summary['items']} items, {summary['judged_pairs']} judged pairs "
               f"({summary['relevant_pairs']} relevant at score >= {summary['relevance_threshold']:g})")
