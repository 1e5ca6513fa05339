"""`cogr-search sync`: a round's item keywords into OpenSearch, as a new index version."""

from __future__ import annotations

import hashlib
from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, opensearch_url, settings_from
from cogr_search.errors import CogrError
from cogr_search.keyword_files import read_keyword_file
from cogr_search.opensearch.client import connect
from cogr_search.opensearch.sync import prune_versions, sync_keywords


def _file_model_name(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"file:{path.name}+{digest}"


@click.command()
@click.option("--index", "alias", required=True, help="Alias to sync (readers keep using it).")
@click.option("--run", "run_name", default=None, help="Training run whose item keywords to use.")
@click.option("--round", "round_", type=int, default=None, help="Round of the run (default: its latest).")
@click.option("--item-keywords", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A JSONL keyword file made elsewhere, instead of --run.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None, envvar="COGR_RUNS_DIR")
@click.option("--keep", type=int, default=3, show_default=True, help="Versions to keep for rollback.")
@click.option("--k-max", type=int, default=30, show_default=True, help="Keywords per item kept at serving time.")
@opensearch_url
@json_output
def sync(alias: str, run_name: str | None, round_: int | None, item_keywords: Path | None, runs_dir: Path | None,
         keep: int, k_max: int, opensearch_url: str | None, as_json: bool) -> None:
    """Write item keywords as a new version `<alias>-r<round>-<n>` and swap the alias to it."""
    if (run_name is None) == (item_keywords is None):
        raise click.UsageError("give either --run RUN [--round R] or --item-keywords FILE")
    if item_keywords is not None:
        keywords = read_keyword_file(item_keywords)
        round_ = 0 if round_ is None else round_
        model = _file_model_name(item_keywords)
    else:
        from cogr_search.training.run_dir import RunDir

        run = RunDir.open(run_name, runs_dir)
        round_ = run.latest_round() if round_ is None else round_
        path = run.item_keywords_path(round_)
        if not path.exists():
            raise CogrError(f"run {run_name!r} has no item keywords for round {round_} ({path})")
        keywords = read_keyword_file(path)
        model = run.model_tag(round_)
    cluster = connect(settings_from(opensearch_url=opensearch_url))
    result = sync_keywords(cluster, alias, keywords, round_, model, k_max=k_max, progress=not as_json)
    pruned = prune_versions(cluster, alias, keep)
    if as_json:
        emit_json({**result.__dict__, "pruned": pruned})
        return
    click.echo(
        f"{result.alias} -> {result.index} (was {result.previous}): {result.documents} documents, "
        f"{result.with_keywords} with keywords, {result.unknown_ids} unknown ids"
        f"{', resumed' if result.resumed else ''}; pruned {len(pruned)} old version(s)"
    )
