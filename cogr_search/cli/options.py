"""Options shared by several commands, so each is spelled and documented once."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click

from cogr_search.settings import Settings, load_settings
from cogr_search.connect import connect
from cogr_search.workflows.context import run_context_source

opensearch_url = click.option(
    "--cluster-url",
    "--opensearch-url",
    "opensearch_url",
    default=None,
    help="An existing OpenSearch or Elasticsearch cluster, detected from `GET /` [default: $COGR_CLUSTER_URL "
    "(or $COGR_OPENSEARCH_URL), else the local node of `cogr-search opensearch start`].",
)
runs_dir = click.option(
    "--runs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of training runs [default: $COGR_RUNS_DIR, else ./runs].",
)
"""Flags only: the environment is read by the settings (`settings_from`), not by click,
so every `COGR_*` variable has one reader and one type check."""
json_output = click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout, nothing else.")


def settings_from(**flags: object) -> Settings:
    """Settings with the command's flags laid over the `COGR_*` environment."""
    return load_settings(**flags)


def emit_json(payload: dict) -> None:
    """The `--json` contract: exactly one JSON object on stdout."""
    sys.stdout.write(json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


context_index = click.option(
    "--context-index", default=None,
    help="Catalog index for the search results of new queries, for runs trained with --query-context "
         "[default: the index the run recorded].",
)


def live_context(run: object, index: str | None, opensearch_url: str | None = None) -> Callable | None:
    """The live search-results source of a run trained with `query_context` (None for
    others): new queries get their top BM25 titles from the catalog index."""

    config = run.config()  # type: ignore[attr-defined]
    if not config.query_context:
        return None
    return run_context_source(config, connect(settings_from(opensearch_url=opensearch_url)), index)
