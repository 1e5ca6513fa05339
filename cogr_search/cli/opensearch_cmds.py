"""`cogr-search opensearch start|stop|status`: the local real OpenSearch node."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import settings_from
from cogr_search.errors import CogrError
from cogr_search.opensearch import local_node

home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Node directory (data, logs, pid); default: $COGR_HOME/opensearch.",
)


def _home(home: Path | None) -> Path:
    return home if home is not None else settings_from().local_node_home


@click.group()
def opensearch() -> None:
    """Run a real single-node OpenSearch 2.19 on 127.0.0.1 (no Docker needed)."""


@opensearch.command()
@click.option("--port", type=int, default=None, help="HTTP port (default 9200, or $COGR_LOCAL_PORT).")
@click.option("--heap", default=None, help="JVM heap, e.g. 1g (default, or $COGR_LOCAL_HEAP).")
@home_option
def start(port: int | None, heap: str | None, home: Path | None) -> None:
    """Build the launcher if needed, start the node in the background, wait for yellow."""
    settings = settings_from(local_port=port, local_heap=heap)
    try:
        info = local_node.start(_home(home), port=settings.local_port, heap=settings.local_heap)
    except local_node.LocalNodeError as err:
        raise CogrError(str(err)) from err
    click.echo(info.url)


@opensearch.command()
@home_option
def stop(home: Path | None) -> None:
    """Stop the node started from this home directory (and nothing else)."""
    try:
        stopped = local_node.stop(_home(home))
    except local_node.LocalNodeError as err:
        raise CogrError(str(err)) from err
    click.echo("stopped" if stopped else "not running")


@opensearch.command()
@home_option
def status(home: Path | None) -> None:
    """Say whether the local node runs, where, and its version."""
    state = local_node.status(_home(home))
    if not state.running:
        click.echo("not running")
        raise SystemExit(3)
    click.echo(f"running: {state.url} (pid {state.pid}, OpenSearch {state.version})")
