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
    from cogr_search.cli import bench_cmds, index_cmds, opensearch_cmds

    cli.add_command(opensearch_cmds.opensearch)
    cli.add_command(index_cmds.index)
    cli.add_command(bench_cmds.bench)
    from cogr_search.cli import demo_cmd, model_cmd, sync_cmd

    cli.add_command(sync_cmd.sync)
    cli.add_command(model_cmd.model)
    cli.add_command(demo_cmd.demo)
    from cogr_search.cli import eval_cmd, ingest_cmd

    cli.add_command(ingest_cmd.ingest)
    cli.add_command(eval_cmd.eval_command)
    cli.add_command(eval_cmd.report_command)
    from cogr_search.cli import expand_cmd, train_cmds

    cli.add_command(train_cmds.train)
    cli.add_command(expand_cmd.expand)


_register()
