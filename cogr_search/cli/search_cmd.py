"""`cogr-search search "text" --index NAME (--run RUN [--round R] | --service URL)`: the
keyword-expanded search an app would send, with the hits and (`--explain`) which
keywords each hit matched."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, live_context, opensearch_url, runs_dir, settings_from
from cogr_search.connect import connect
from cogr_search.serve.client import CogrSearch
from cogr_search.serve.auth import read_token, service_token
from cogr_search.runs.run_dir import RunDir


@click.command()
@click.argument("text")
@click.option("--index", "alias", required=True, help="Alias to search.")
@click.option("--run", "run_name", default=None, help="Expand with this run's query generator (loaded here).")
@click.option("--round", "round_", type=int, default=None, help="Round of --run (default: its latest).")
@runs_dir
@click.option("--service", "service_url", default=None,
              help="Expand through a running `cogr-search serve` at this URL instead [default: $COGR_SERVICE_URL].")
@click.option("--service-token-file", type=click.Path(path_type=Path), default=None,
              help="Bearer token for --service [default: $COGR_SERVICE_TOKEN, else $COGR_SERVICE_TOKEN_FILE].")
@click.option("--k", "size", type=click.IntRange(1, 10_000), default=10, show_default=True, help="Hits to return.")
@click.option("--from", "from_", type=click.IntRange(min=0), default=0, show_default=True, help="Hits to skip.")
@click.option("--filter", "filters", multiple=True, metavar="JSON",
              help='An extra filter clause, e.g. \'{"term": {"brand": "acme"}}\' (repeatable).')
@click.option("--explain", is_flag=True, help="Show which query keywords each hit carries.")
@click.option("--expander", type=click.Choice(["auto", "student", "llm"]), default="auto", show_default=True,
              help="With --run: auto takes the round's students when it has them, else the LLM generators.")
@opensearch_url
@json_output
def search(text: str, alias: str, run_name: str | None, round_: int | None, runs_dir: Path | None,
           service_url: str | None, service_token_file: Path | None, size: int, from_: int, filters: tuple[str, ...], explain: bool, expander: str,
           opensearch_url: str | None, as_json: bool) -> None:
    """Expand TEXT into keywords and search --index with the keyword-expanded query."""

    if run_name is None:
        service_url = service_url or settings_from().service_url
    if (run_name is None) == (service_url is None):
        raise click.UsageError("give either --run RUN [--round R] or --service URL")
    clauses = [_filter(raw, i) for i, raw in enumerate(filters)]
    cluster = connect(settings_from(opensearch_url=opensearch_url))
    if service_url:
        settings = settings_from()
        token = read_token(service_token_file) if service_token_file is not None else service_token(settings)
        api = CogrSearch.from_service(cluster.client, service_url, index=alias, token=token,
                                      ca_certs=settings.service_ca_certs)
    else:
        # a run trained with search results in its prompt gets them from the index searched
        context = live_context(RunDir.open(run_name, runs_dir), alias, opensearch_url) if expander != "student" else None
        api = CogrSearch.from_run(cluster.client, run_name, round_, runs_dir=runs_dir, index=alias, context=context,
                                  expander=expander)
    try:
        result = api.search(text, size=size, from_=from_, filters=clauses or None, explain=explain)
    finally:
        api.close()
    if as_json:
        emit_json({**result.as_dict(), "index": alias, "run": api.expander.run, "round": api.expander.round,
                   "model": api.expander.model, "expander": getattr(api.expander, "kind", "llm")})
        return
    click.echo(f"keywords: {', '.join(result.representation)}")
    click.echo(f"{result.total} retrieved, {result.took_ms} ms")
    for rank, hit in enumerate(result.hits, start=from_ + 1):
        title = (hit.source or {}).get("title", "")
        score = f"{hit.score:.3f}" if hit.score is not None else "-"
        click.echo(f"{rank:>3}. {hit.id}  {score}  {title}")
        if explain:
            click.echo(f"     matched: {', '.join(hit.matched or [])}")


def _filter(raw: str, index: int) -> dict:
    try:
        clause = json.loads(raw)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"--filter {index + 1}: not JSON ({err.msg})") from None
    if not isinstance(clause, dict):
        raise click.BadParameter(f"--filter {index + 1}: expected a JSON object")
    return clause
