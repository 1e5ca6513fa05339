"""`cogr-search sync`: a round's item keywords into OpenSearch, as a new index version."""

from __future__ import annotations

import hashlib
from pathlib import Path

import click

from cogr_search.cli.config_flags import ConfigFlags, config_flags, flag
from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.progress import progress_wanted
from cogr_search.errors import CogrError, InputError
from cogr_search.keywords import DEFAULT_K_MAX
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.cluster.sync_config import SyncConfig


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


def _file_model_name(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"file:{path.name}+{digest}"


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
    if (run_name is None) == (item_keywords is None):
        raise click.UsageError("give either --run RUN [--round R] or --item-keywords FILE")
    if items is None:
        items = _default_items(run_name, round_, runs_dir)
    if items == "all" and run_name is None:
        raise click.UsageError("--items all needs --run RUN (its item student writes the missing items' keywords)")
    if catalog is not None and items != "all":
        raise click.UsageError("--data goes with --items all")
    student_items = None
    k_max = config_flags.overrides().get("k_max")
    if item_keywords is not None:
        keywords = read_keyword_file(item_keywords)
        round_ = 0 if round_ is None else round_
        model = _file_model_name(item_keywords)
        k_max = k_max or DEFAULT_K_MAX
    else:
        from cogr_search.runs.run_dir import RunDir

        run = RunDir.open(run_name, runs_dir)
        spec = run.serving_spec(round_)
        round_, model = spec.round, spec.item_model
        if k_max is not None and k_max != spec.k_max:
            raise InputError(f"--k-max {k_max}: run {run.name!r} was trained with k_max {spec.k_max}, and its "
                             f"documents must be built the same way (leave --k-max out)")
        k_max = spec.k_max
        path = run.item_keywords_path(round_)
        if not path.exists():
            raise CogrError(f"run {run_name!r} has no item keywords for round {round_} ({path})")
        keywords = read_keyword_file(path)
        if items == "all":
            from cogr_search.generators.students.distill import keywords_for_catalog

            keywords, student_items, model = keywords_for_catalog(run, round_, keywords, catalog,
                                                                 progress=progress_wanted(as_json))
            _notify(f"item student {model}: keywords for {student_items} items")
    from cogr_search.cluster.client import connect
    from cogr_search.cluster.sync import CoverageError, prune_versions, sync_keywords

    config = config_flags.build(k_max=k_max)
    cluster = connect(settings_from(opensearch_url=opensearch_url))
    try:
        result = sync_keywords(cluster, alias, keywords, round_, model, config, progress=progress_wanted(as_json), notify=_notify)
    except CoverageError as err:
        if run_name is None or items == "all" or not _has_item_student(run, round_):
            raise
        raise CoverageError(f"{err}, or --items all (the run's item student writes keywords for the items its "
                            "teacher did not label)") from err
    pruned = [] if result.unchanged else prune_versions(cluster, alias, config.keep)
    if as_json:
        emit_json({**result.as_dict(), "k_max": config.k_max, "pruned": pruned, "student_items": student_items})
        return
    if result.unchanged:
        click.echo(f"{result.alias} -> {result.index} already serves these keywords (round {round_}); nothing to do")
        return
    click.echo(
        f"{result.alias} -> {result.index} (was {result.previous}): {result.documents} documents, "
        f"{result.with_keywords} with keywords, {result.kept} kept, {result.title_only} title only, "
        f"{result.unknown_ids} unknown ids{', resumed' if result.resumed else ''}; {result.caught_up} caught up, "
        f"{result.deleted_documents} deleted during the copy; writes refused {result.freeze_s:.2f}s; "
        f"pruned {len(pruned)} old version(s)"
    )


def _has_item_student(run, round_: int) -> bool:  # noqa: ANN001
    """Whether `train distill` left an item student in the run's round (`--items all` works)."""
    from cogr_search.generators.students.distill import students_folder
    from cogr_search.generators.students.store import read_manifest

    try:
        manifest = read_manifest(students_folder(run, round_))
    except ValueError:
        return False
    return bool(manifest and "item" in (manifest.get("sides") or {}))


def _default_items(run_name: str | None, round_: int | None, runs_dir: Path | None) -> str:
    """`all` for a round with refined students, else `labelled`: a refined query student
    was fitted against the refined item student's keywords, so serving it against the
    teacher's item keywords would serve another index than the one it was refined on."""
    if run_name is None:
        return "labelled"
    from cogr_search.generators.students.distill import students_folder
    from cogr_search.generators.students.store import REFINED_VERSION
    from cogr_search.runs.run_dir import RunDir

    run = RunDir.open(run_name, runs_dir)
    if students_folder(run, run.require_round(round_)).name != REFINED_VERSION:
        return "labelled"
    _notify("the round has refined students: every item gets the item student's keywords (--items all)")
    return "all"


def _print_status(alias: str, opensearch_url: str | None, as_json: bool) -> None:
    from cogr_search.cluster.client import connect
    from cogr_search.cluster.sync_status import sync_status
    from cogr_search.localnode.multinode import health_line

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
    from cogr_search.cluster.client import connect
    from cogr_search.cluster.sync_lease import unfreeze

    lifted = unfreeze(connect(settings_from(opensearch_url=opensearch_url)), alias)
    if as_json:
        emit_json({"alias": alias, "lifted": lifted})
    elif lifted:
        click.echo(f"writes to {', '.join(lifted)} (alias {alias}) are allowed again")
    else:
        click.echo(f"alias {alias}: neither its serving version nor a frozen one refuses writes; nothing lifted")
