"""`cogr-search serve --run RUN [--round R] [--host H] [--port P]`: the HTTP expansion
service (contract in `cogr_search/serve/app.py`)."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.config_flags import ConfigFlags, config_flags, flag
from cogr_search.cli.options import context_index, live_context, opensearch_url, runs_dir, settings_from
from cogr_search.serve.service import ServeConfig
from cogr_search.runs.run_dir import RunDir
from cogr_search.serve.auth import read_token
from cogr_search.serve.server import Security, serve as run_server


SERVE_FLAGS = [
    flag("--cache-size", "service.cache_size"),
    flag("--max-batch", "service.max_batch"),
    flag("--max-wait-ms", "service.max_wait_ms"),
    flag("--max-pending", "service.max_pending"),
    flag("--generation-timeout", "service.generation_timeout_s"),
    flag("--max-texts", "limits.max_texts"),
    flag("--max-text-chars", "limits.max_text_chars"),
    flag("--max-description-chars", "limits.max_description_chars"),
    flag("--max-body-bytes", "limits.max_body_bytes"),
    flag("--sides", "sides"),
    flag("--sampling", "sampling"),
    flag("--max-new-tokens", "max_new_tokens"),
    flag("--backend", "backend"),
    flag("--expander", "expander"),
]


def _serve_config() -> type:
    return ServeConfig


@click.command()
@click.option("--run", "run_name", required=True, help="Run name (under --runs-dir) or path.")
@click.option("--round", "round_", type=int, default=None, help="Round (default: the latest complete round).")
@runs_dir
@click.option("--host", default=None, help="Address to bind [default: $COGR_SERVE_HOST, else 127.0.0.1].")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port [default: $COGR_SERVE_PORT, else 8300].")
@click.option("--token-file", type=click.Path(path_type=Path), default=None,
              help="Require 'Authorization: Bearer <this file's content>' on every route but /health.")
@click.option("--tls-cert", type=click.Path(path_type=Path), default=None, help="Serve https with this PEM certificate (chain).")
@click.option("--tls-key", type=click.Path(path_type=Path), default=None, help="The PEM private key of --tls-cert.")
@click.option("--metrics-auth/--no-metrics-auth", default=False, show_default=True,
              help="Whether GET /metrics needs the token too (default: open, like /health, for scrapers).")
@config_flags(_serve_config(), SERVE_FLAGS)
@context_index
@opensearch_url
def serve(run_name: str, round_: int | None, runs_dir: Path | None, host: str | None, port: int | None,
          token_file: Path | None, tls_cert: Path | None, tls_key: Path | None, metrics_auth: bool,
          config_flags: ConfigFlags, context_index: str | None, opensearch_url: str | None) -> None:
    """Serve RUN's query and item expanders (its students when the round has them) over HTTP.

    \b
    curl -s localhost:8300/v1/expand/query -H 'Content-Type: application/json' \\
         -d '{"texts": ["oak dining table"]}'
    -> {"keywords": [["oak dining", "dining table", ...]], "run": "hg", "round": 0,
        "model": "hg+r0+student-...", "expander": "student"}
    curl -s localhost:8300/v1/expand/item -H 'Content-Type: application/json' \\
         -d '{"items": [{"id": "p1", "title": "Walnut Dining Table", "description": "..."}]}'
    -> {"keywords": [["walnut dining", "dining table"]], "run": "hg", ...}
    curl -s localhost:8300/health
    -> {"status": "ok", "expander": "student", "model": "...", "limits": {...}, ...}

    Errors are {"error": "..."} with 400, 401 (--token-file), 413, 503 or 504. GET /metrics:
    Prometheus text. Every schema: the OpenAPI page at http://HOST:PORT/docs. Each route
    with its full response, and the production flags: docs/service.md.
    """

    settings = settings_from()
    host = host or settings.serve_host
    port = settings.serve_port if port is None else port
    config = config_flags.build()
    if metrics_auth and token_file is None:
        raise click.UsageError("--metrics-auth needs --token-file")
    security = Security(token=read_token(token_file) if token_file is not None else None,
                        tls_cert=tls_cert, tls_key=tls_key, metrics_auth=metrics_auth)
    security.check_tls()
    options = {"sides": ("query", "item") if config.sides == "both" else (config.sides,), "backend": config.backend,
               "sampling": config.sampling, "max_new_tokens": config.max_new_tokens,
               "batch_size": config.service.max_batch, "expander": config.expander,
               "context": live_context(RunDir.open(run_name, runs_dir), context_index, opensearch_url)}
    run_server(run_name, round_, host=host, port=port, runs_dir=runs_dir, config=config.service,
               limits=config.limits, expander_options=options, security=security, echo=lambda line: click.echo(line, err=True))
