"""`cogr-search bench ...`: measured speed, printed (or `--json`), never asserted in tests.

Each subcommand calls a function in `cogr_search.bench` and prints its result; the
figures and the command that produced them are recorded in benchmarks/.
"""

from __future__ import annotations

import click


@click.group()
def bench() -> None:
    """Measure ingest, rewards, generation, sync and search speed on this machine."""
