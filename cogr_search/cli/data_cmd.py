"""`cogr-search data subset`: a smaller real data set (seeded queries + their judged items)."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output
from cogr_search.data import load_dataset
from cogr_search.data.subset import judged_subset, write_beir
from cogr_search.atomic import check_writable
from cogr_search.errors import InputError


@click.group()
def data() -> None:
    """Tools for relevance data sets."""


@data.command("subset")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--queries", "n_queries", type=int, required=True, help="Queries to keep (seeded sample of those with a relevant item).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for the BEIR files.")
@json_output
def subset(source: Path, n_queries: int, seed: int, out: Path, as_json: bool) -> None:
    """Write N queries of SOURCE and every item judged for them to OUT (BEIR layout)."""


    if out.resolve() == source.resolve():
        raise InputError(f"--out {out}: is SOURCE; the subset would overwrite the data set it is cut from")
    full = load_dataset(source)
    part = judged_subset(full, n_queries, seed)
    check_writable(out / "corpus.jsonl")
    write_beir(part, out, f"subset of {source.resolve()}: {n_queries} queries (seed {seed}) and every item judged for them")
    summary = {"out": str(out), "name": part.name, "queries": len(part.queries), "items": len(part.items),
               "judged_pairs": sum(len(g) for g in part.labels.values()),
               "relevant_pairs": sum(len(r) for r in part.relevant().values()),
               "relevance_threshold": part.relevance_threshold}
    if as_json:
        emit_json(summary)
        return
    click.echo(f"{out}: {summary['queries']} queries, {summary['items']} items, {summary['judged_pairs']} judged pairs "
               f"({summary['relevant_pairs']} relevant at score >= {part.relevance_threshold:g})")
