"""`cogr-search index ...`: the alias and its versioned indices."""

from __future__ import annotations

import click

from cogr_search.cli.options import opensearch_url, settings_from
from cogr_search.opensearch.client import connect
from cogr_search.opensearch.indices import create_index


@click.group()
def index() -> None:
    """Create and inspect cogr-search indices."""


@index.command("create")
@click.option("--index", "alias", required=True, help="Alias name that readers use.")
@opensearch_url
def create(alias: str, opensearch_url: str | None) -> None:
    """Install the template, create the first version and point the alias at it (idempotent)."""
    cluster = connect(settings_from(opensearch_url=opensearch_url))
    state = create_index(cluster, alias)
    verb = "created" if state.created else "exists"
    click.echo(f"{verb}: alias {state.alias} -> {state.index} ({cluster.url})")
