"""The `cogr-search` command: a click group that only wires subcommands together.

Each command module parses arguments, calls the library and prints; no logic lives here.
Library errors (`CogrError`) become click's one-line `Error: ...` with exit status 1.
"""

from __future__ import annotations

import click

from cogr_search import __version__
from cogr_search.errors import CogrError


class CogrGroup(click.Group):
    """A group whose commands report `CogrError` as one line instead of a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except CogrError as err:
            raise click.ClickException(str(err)) from err


@click.group(cls=CogrGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cogr-search")
def cli() -> None:
    """Co-evolving generative keyword retrieval (CoGR) for OpenSearch."""


def _register() -> None:
    # Imported here so that `cli` is the only name the entry point needs.
    from cogr_search.cli import (
        bench_cmds,
        demo_cmd,
        eval_cmd,
        expand_cmd,
        index_cmds,
        ingest_cmd,
        model_cmd,
        opensearch_cmds,
        search_cmd,
        serve_cmd,
        sync_cmd,
        train_cmds,
    )

    for command in (
        opensearch_cmds.opensearch,
        index_cmds.index,
        ingest_cmd.ingest,
        model_cmd.model,
        train_cmds.train,
        sync_cmd.sync,
        expand_cmd.expand,
        search_cmd.search,
        serve_cmd.serve,
        eval_cmd.eval_command,
        eval_cmd.report_command,
        demo_cmd.demo,
        bench_cmds.bench,
    ):
        cli.add_command(command)


_register()
