"""`cogr-search sync`: a round's item keywords into OpenSearch, as a new index version."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.config_flags import ConfigFlags, config_flags, flag
from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.progress import progress_wanted
from cogr_search.connect import connect
from cogr_search.cluster.sync_config import SyncConfig
from cogr_search.cluster.sync_lease import unfreeze
from cogr_search.cluster.sync_status import sync_status
from cogr_search.localnode.multinode import health_line
from cogr_search.workflows.round_sync import SyncRequest, sync_request


SYNC_FLAGS = [
    flag("--missing", "missing"),
    flag("--keep", "keep"),
    flag("--k-max", "k_max", help="Keywords per item kept [default: 30; with --run, the run's k_max and no other]."),
    flag("--unknown-tolerance", "unknown_tolerance"),
    flag("--chunk-size", "chunk_size"),
    flag("--in-flight", "in_flight"),
    flag("--lease-s", "lease_s"),
    flag("--catch-up-rounds", "catch_up_rounds"),
    flag("--freeze-below", "freeze_below"),
]


def _notify(message: str) -> None:
    click.echo(f"note: {message}", err=True)


@click.command()
@click.option("--index", "alias", required=True, help="Alias to sync (readers keep using it).")
@click.option("--status", "show_status", is_flag=True,
              help="Show the alias's serving version, versions and any sync in progress (lifting a dead sync's freeze).")
@click.option("--unfreeze", "lift_freeze", is_flag=True,
              help="Allow writes again to the version a sync left frozen (and to the serving version), "
                   "and drop that sync's lease; refused while a live sync holds the alias.")
@click.option("--run", "run_name", default=None, help="Training run whose item keywords to use.")
@click.option("--round", "round_", type=int, default=None, help="Round of the run (default: its latest complete one).")
@click.option("--item-keywords", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A JSONL keyword file made elsewhere, instead of --run.")
@click.option("--items", "items", type=click.Choice(["labelled", "all"]), default=None,
              help="With --run: all adds the item student's keywords for every item of the run's catalog the "
                   "teacher did not label (needs `train distill`; the version's model tag is then the student's); "
                   "refined students (`train distill --refine`) write every item. [default: all when the round "
                   "has refined students (their query student was fitted against their item keywords), else labelled]")
@click.option("--data", "catalog", type=click.Path(exists=True, path_type=Path), default=None,
              help="With --items all: the catalog whose unlabelled items the student writes [default: the run's data].")
@runs_dir
@config_flags(SyncConfig, SYNC_FLAGS)
@opensearch_url
@json_output
def sync(alias: str, show_status: bool, lift_freeze: bool, run_name: str | None, round_: int | None, item_keywords: Path | None,
         items: str, catalog: Path | None, runs_dir: Path | None, config_flags: ConfigFlags, opensearch_url: str | None, as_json: bool) -> None:
    """Write item keywords as a new version `<alias>-r<round>-<n>` and swap the alias to it.

    Online: the application's writes through the alias go on during the copy and are
    caught up; only the last catch-up and the swap refuse writes (freeze_s, about a
    second). One sync per alias (a lease in the cluster); an interrupted sync is resumed
    by running the same command again.
    """
    if show_status and lift_freeze:
        raise click.UsageError("give --status or --unfreeze, not both")
    if show_status:
        _print_status(alias, opensearch_url, as_json)
        return
    if lift_freeze:
        _print_unfreeze(alias, opensearch_url, as_json)
        return
    request = SyncRequest(run=run_name, round=round_, item_keywords=item_keywords, items=items, catalog=catalog,
                          runs_dir=runs_dir, k_max=config_flags.overrides().get("k_max"))
    outcome = sync_request(connect(settings_from(opensearch_url=opensearch_url)), alias, request,
                           config_flags.build(), progress=progress_wanted(as_json), notify=_notify)
    result = outcome.result
    if as_json:
        emit_json(outcome.as_dict())
        return
    if result.unchanged:
        click.echo(f"{result.alias} -> {result.index} already serves these keywords (round {result.round}); nothing to do")
        return
    click.echo(
        f"{result.alias} -> {result.index} (was {result.previous}): {result.documents} documents, "
        f"{result.with_keywords} with keywords, {result.kept} kept, {result.title_only} title only, "
        f"{result.unknown_ids} unknown ids{', resumed' if result.resumed else ''}; {result.caught_up} caught up, "
        f"{result.deleted_documents} deleted during the copy; writes refused {result.freeze_s:.2f}s; "
        f"pruned {len(outcome.pruned)} old version(s)"
    )


def _print_status(alias: str, opensearch_url: str | None, as_json: bool) -> None:
    state = sync_status(connect(settings_from(opensearch_url=opensearch_url)), alias, notify=_notify)
    if as_json:
        emit_json(state)
        return
    if state["left_frozen"]:
        click.echo(state["left_frozen"])
    click.echo(f"{alias} -> {state['serving']}")
    click.echo(f"cluster: {health_line(state['cluster'])}")
    lease = state["sync"]
    if lease is None:
        click.echo("sync: none in progress")
    else:
        line = f"sync: {lease['host']} pid {lease['pid']}, phase {lease['phase']}, for {lease['age_s']:.0f}s"
        if lease["stale"]:
            line += f"; stale ({lease['stale']})"
        elif lease["freeze"]:
            line += f"; writes to {lease['freeze']['index']} refused (final freeze)"
        click.echo(line)
    for v in state["versions"]:
        flags = ", ".join(f for f in ("serving" if v["serving"] else "", "WRITES BLOCKED" if v["write_blocked"] else "") if f)
        click.echo(f"  {v['index']}: round {v['round']}, {v['state']}, {v['documents']} documents"
                   + (f" ({flags})" if flags else ""))


def _print_unfreeze(alias: str, opensearch_url: str | None, as_json: bool) -> None:
    lifted = unfreeze(connect(settings_from(opensearch_url=opensearch_url)), alias)
    if as_json:
        emit_json({"alias": alias, "lifted": lifted})
    elif lifted:
        click.echo(f"writes to {', '.join(lifted)} (alias {alias}) are allowed again")
    else:
        click.echo(f"alias {alias}: neither its serving version nor a frozen one refuses writes; nothing lifted")
