"""`cogr-search ingest DATA --index NAME`: bulk-load a catalog's items into an alias."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.progress import progress_wanted
from cogr_search.data import ColumnMapping, load_dataset
from cogr_search.connect import connect
from cogr_search.cluster.ingest import ingest_items
from cogr_search.serve.expander import check_expander
from cogr_search.cluster.pipelines import check_pipeline, enriched_count
from cogr_search.workflows.enrich import enrich_from_run


@click.command("ingest")
@click.argument("data", type=click.Path(exists=True, path_type=Path))
@click.option("--index", "alias", required=True, help="Alias to load into (created with its first version if missing).")
@click.option("--columns", default=None, metavar="id=COL,title=COL,description=COL",
              help="Column mapping for a plain CSV/TSV/JSONL catalog file.")
@click.option("--chunk-size", type=click.IntRange(1, 10_000), default=500, show_default=True, help="Documents per _bulk request.")
@click.option("--enrich", is_flag=True, help="Then generate item keywords with --run's item generator and write them.")
@click.option("--run", "run_name", default=None, help="Run whose item expander --enrich uses.")
@click.option("--round", "round_", type=int, default=None, help="Round of --run (default: its latest).")
@click.option("--expander", type=click.Choice(["auto", "student", "llm"]), default="auto", show_default=True,
              help="With --enrich --run: auto takes the round's item student when it has one, else its item generator.")
@runs_dir
@click.option("--pipeline", default=None, is_flag=False, flag_value="cogr-ingest", metavar="[NAME]",
              help="With --enrich: enrich in OpenSearch through this ingest pipeline (default name cogr-ingest).")
@opensearch_url
@json_output
def ingest(data: Path, alias: str, columns: str | None, chunk_size: int, enrich: bool, run_name: str | None,
           round_: int | None, expander: str, runs_dir: Path | None, pipeline: str | None, opensearch_url: str | None,
           as_json: bool) -> None:
    """Bulk-load DATA's items (id, title, description) into the index behind --index.

    DATA is a BEIR or WANDS directory, a directory with a cogr-dataset.json, or a single
    CSV/TSV/JSONL catalog file. Rerunning converges (documents are keyed by item id), so an
    interrupted load is resumed by running the same command again; keywords already
    synced into the index are kept.
    """

    if enrich and (run_name is None) == (pipeline is None):
        raise click.UsageError("--enrich needs either --run RUN or --pipeline [NAME]")
    if pipeline is not None and not enrich:
        raise click.UsageError("--pipeline goes with --enrich")
    dataset = load_dataset(data, columns=ColumnMapping.parse(columns) if columns else None)
    for note in dataset.notes:
        click.echo(f"note: {note}", err=True)
    if enrich and run_name is not None:
        check_expander(run_name, round_, expander, runs_dir)  # before the index is created or filled
    cluster = connect(settings_from(opensearch_url=opensearch_url))
    if pipeline is not None:
        check_pipeline(cluster, pipeline)
    report = ingest_items(
        cluster, alias, dataset.items.values(), total=len(dataset.items), chunk_size=chunk_size,
        progress=progress_wanted(as_json),
        pipeline=pipeline,
    )
    result = {"data": str(data), "dataset": dataset.name, "opensearch": cluster.url, **report.as_dict()}
    if pipeline is not None:
        result["enrich"] = {"pipeline": pipeline, "documents_with_keywords": enriched_count(cluster, alias)}
    elif enrich:
        enriched = enrich_from_run(cluster, alias, dataset.items.values(), run_name, round_, runs_dir=runs_dir,
                                   total=len(dataset.items), progress=progress_wanted(as_json), expander=expander)
        result["enrich"] = enriched.as_dict()
    if as_json:
        emit_json(result)
    else:
        click.echo(
            f"{report.items} items -> alias {report.alias} ({report.index}): {report.created} created, "
            f"{report.updated} updated, {report.unchanged} unchanged, {report.failed} failed; "
            f"{report.documents_in_index} documents in the index; {report.seconds:.1f} s"
        )
        for failure in report.failures:
            click.echo(f"  failed: {failure}", err=True)
    if pipeline is not None and not as_json:
        click.echo(f"enriched through pipeline {pipeline}: {result['enrich']['documents_with_keywords']} documents carry keywords")
    elif enrich and not as_json:
        click.echo(enriched.summary())
    if report.failed:
        raise click.ClickException(f"{report.failed} of {report.items} items failed to index (first: {report.failures[0]})")
    if pipeline is None and enrich and enriched.failed:
        raise click.ClickException(f"{enriched.failed} items failed to enrich (first: {enriched.failures[0]})")
