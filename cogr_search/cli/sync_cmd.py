"""`cogr-search sync`: a round's item keywords into OpenSearch, as a new index version."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import get_args

import click

from cogr_search.cli.options import config_option, emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.errors import CogrError
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.cluster.client import connect
from cogr_search.cluster.sync import Missing, SyncConfig, prune_versions, sync_keywords


def _file_model_name(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"file:{path.name}+{digest}"


def _notify(message: str) -> None:
    click.echo(f"note: {message}", err=True)


@click.command()
@click.option("--index", "alias", required=True, help="Alias to sync (readers keep using it).")
@click.option("--run", "run_name", default=None, help="Training run whose item keywords to use.")
@click.option("--round", "round_", type=int, default=None, help="Round of the run (default: its latest complete one).")
@click.option("--item-keywords", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A JSONL keyword file made elsewhere, instead of --run.")
@runs_dir
@config_option(SyncConfig, "missing", type=click.Choice(get_args(Missing)))
@config_option(SyncConfig, "keep", type=click.IntRange(min=1))
@config_option(SyncConfig, "k_max", type=click.IntRange(min=1))
@config_option(SyncConfig, "unknown_tolerance", type=click.FloatRange(0, 1))
@config_option(SyncConfig, "chunk_size", type=click.IntRange(1, 10_000))
@opensearch_url
@json_output
def sync(alias: str, run_name: str | None, round_: int | None, item_keywords: Path | None, runs_dir: Path | None,
         missing: str, keep: int, k_max: int, unknown_tolerance: float, chunk_size: int, opensearch_url: str | None,
         as_json: bool) -> None:
    """Write item keywords as a new version `<alias>-r<round>-<n>` and swap the alias to it.

    Writes to the alias's current version are blocked during the copy (and lifted after
    the swap); an interrupted sync is resumed by running the same command again.
    """
    if (run_name is None) == (item_keywords is None):
        raise click.UsageError("give either --run RUN [--round R] or --item-keywords FILE")
    config = SyncConfig(missing=missing, keep=keep, k_max=k_max, unknown_tolerance=unknown_tolerance, chunk_size=chunk_size)
    if item_keywords is not None:
        keywords = read_keyword_file(item_keywords)
        round_ = 0 if round_ is None else round_
        model = _file_model_name(item_keywords)
    else:
        from cogr_search.runs.run_dir import RunDir

        run = RunDir.open(run_name, runs_dir)
        round_ = run.require_round(round_)
        path = run.item_keywords_path(round_)
        if not path.exists():
            raise CogrError(f"run {run_name!r} has no item keywords for round {round_} ({path})")
        keywords = read_keyword_file(path)
        model = run.model_tag(round_)
    cluster = connect(settings_from(opensearch_url=opensearch_url))
    result = sync_keywords(cluster, alias, keywords, round_, model, config, progress=not as_json, notify=_notify)
    pruned = [] if result.unchanged else prune_versions(cluster, alias, keep)
    if as_json:
        emit_json({**result.as_dict(), "pruned": pruned})
        return
    if result.unchanged:
        click.echo(f"{result.alias} -> {result.index} already serves these keywords (round {round_}); nothing to do")
        return
    click.echo(
        f"{result.alias} -> {result.index} (was {result.previous}): {result.documents} documents, "
        f"{result.with_keywords} with keywords, {result.kept} kept, {result.title_only} title only, "
        f"{result.unknown_ids} unknown ids{', resumed' if result.resumed else ''}; pruned {len(pruned)} old version(s)"
    )
