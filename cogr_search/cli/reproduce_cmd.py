"""`cogr-search reproduce FILE [--dry-run]`: rerun a declared result, OK / FAIL per metric."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, opensearch_url, settings_from
from cogr_search import reproduce as rep
from cogr_search.connect import connect


@click.command("reproduce")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print the commands and the expected figures; run nothing.")
@click.option("--index", "index", default=None, help="Alias for {index} (default: the file name).")
@click.option("--data-root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The folder that holds the data set folder FILE names as {data} (e.g. ~/data for ~/data/homedepot).")
@opensearch_url
@json_output
def reproduce(file: Path, dry_run: bool, index: str | None, data_root: Path | None, opensearch_url: str | None, as_json: bool) -> None:
    """Run FILE's commands and compare the figures it declares (exit 1 on any FAIL)."""
    declared = rep.read_declared(file)
    values = rep.placeholders(declared, index, data_root)
    if dry_run:
        for command in (*declared.setup, declared.command):
            click.echo(f"{rep.PROGRAM} {shlex.join(rep.expand(command, values, file))}")
        click.echo(f"expect documents = {declared.documents}")
        for name, value in declared.metrics.items():
            click.echo(f"expect {name} = {value:g} ± {declared.tolerances.get(name, declared.tolerance):g}")
        return
    env = {"COGR_OPENSEARCH_URL": opensearch_url} if opensearch_url else {}

    def count_documents(alias: str) -> int:
        cluster = connect(settings_from(opensearch_url=opensearch_url))
        return int(cluster.call(cluster.client.count, index=alias)["count"])

    echo = (lambda line: click.echo(line, err=True)) if as_json else click.echo
    checks = rep.reproduce(declared, values, env, count_documents, echo)
    failed = [c.name for c in checks if not c.ok]
    if as_json:
        emit_json({
            "file": str(file),
            "title": declared.title,
            "ok": not failed,
            "checks": [{"name": c.name, "expected": c.expected, "got": c.got, "tolerance": c.tolerance, "ok": c.ok} for c in checks],
        })
    else:
        for check in checks:
            click.echo(check.line())
        click.echo(f"{declared.title}: {'OK' if not failed else 'FAIL (' + ', '.join(failed) + ')'}")
    if failed:
        raise SystemExit(1)
