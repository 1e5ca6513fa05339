"""`cogr-search index ...`: the alias and its versioned indices."""

from __future__ import annotations

import click

from cogr_search.cli.options import opensearch_url, settings_from
from cogr_search.connect import connect
from cogr_search.cluster.indices import create_index
from cogr_search.cluster.mappings import check_alias_name
from cogr_search.cluster.pipelines import PipelineConfig, check_pipeline_config, install_pipelines, require_pipelines
import dataclasses
from cogr_search.runs.run_dir import RunDir
from cogr_search.workflows.deploy_students import deploy_students


@click.group()
def index() -> None:
    """Create cogr-search indices (an alias over versioned indices; `sync --status` shows them)."""


@index.command("create")
@click.option("--index", "alias", required=True, help="Alias name that readers use.")
@click.option("--pipelines", is_flag=True, help="Also install the ingest and search pipelines (needs the plugin).")
@click.option("--service-url", default=None, help="Expansion service the pipelines call [default: $COGR_SERVICE_URL].")
@click.option("--run", "run_name", default=None,
              help="Without --service-url: store this run's students in the cluster and expand there (no service).")
@click.option("--round", "round_", type=int, default=None, help="The run's round whose students are stored [default: latest].")
@click.option("--ingest-pipeline", default="cogr-ingest", show_default=True, help="Name of the ingest pipeline.")
@click.option("--search-pipeline", default="cogr", show_default=True, help="Name of the search pipeline.")
@click.option("--field", default="title", show_default=True, help="Field whose `match` the search pipeline expands.")
@click.option("--batch-size", type=click.IntRange(1, 1000), default=32, show_default=True,
              help="Documents per call to the service from the ingest pipeline.")
@click.option("--ingest-timeout", default=None, metavar="TIME",
              help="How long one ingest batch waits for the service, e.g. 60s (default: the plugin's 60s).")
@click.option("--search-timeout", default=None, metavar="TIME",
              help="How long a search waits for an expansion before falling back, e.g. 500ms (default: 2s).")
@click.option("--default-pipelines", is_flag=True, help="Make both pipelines the defaults of the alias's current version.")
@opensearch_url
def create(alias: str, pipelines: bool, service_url: str | None, run_name: str | None, round_: int | None,
           ingest_pipeline: str, search_pipeline: str, field: str,
           batch_size: int, ingest_timeout: str | None, search_timeout: str | None, default_pipelines: bool,
           opensearch_url: str | None) -> None:
    """Install the template, create the first version and point the alias at it (idempotent).

    With --pipelines --run RUN and no --service-url, the run's students are stored in the
    cluster (index cogr-students) and both processors expand inside the nodes."""
    in_cluster = run_name is not None and service_url is None
    service_url = None if in_cluster else (service_url or settings_from().service_url)
    if (pipelines or default_pipelines) and not service_url and not in_cluster:
        raise click.UsageError("--pipelines needs --run RUN (students in the cluster) or --service-url URL (or COGR_SERVICE_URL)")
    if round_ is not None and run_name is None:
        raise click.UsageError("--round needs --run RUN")

    check_alias_name(alias)  # everything is checked before the template, index or pipelines are written
    config = None
    if pipelines or default_pipelines:
        config = PipelineConfig(service_url=service_url, field=field, batch_size=batch_size,
                                ingest_timeout=ingest_timeout, search_timeout=search_timeout)
        check_pipeline_config(config)
    run = None
    if in_cluster and config is not None:
        run = RunDir.open(run_name)
    cluster = connect(settings_from(opensearch_url=opensearch_url))
    if config is not None:
        require_pipelines(cluster, "index create --pipelines")  # before the index is created
    if run is not None:

        models, stored = deploy_students(cluster, run, round_)
        config = dataclasses.replace(config, students=models)
        for s in stored:
            click.echo(f"student {s.side}: {s.model_id} ({s.bytes} bytes in {s.chunks} chunks, "
                       f"{'stored' if s.written else 'already stored'})")
    state = create_index(cluster, alias)
    verb = "created" if state.created else "exists"
    click.echo(f"{verb}: alias {state.alias} -> {state.index} ({cluster.url})")
    if config is not None:
        done = install_pipelines(cluster, config, ingest_pipeline, search_pipeline,
                                 default_on=alias if default_pipelines else None)
        click.echo(f"pipelines: ingest {done.ingest_pipeline}, search {done.search_pipeline} -> {done.service_url}")
        if done.defaults_on:
            click.echo(f"defaults: {done.defaults_on} uses them (index.default_pipeline, index.search.default_pipeline)")
