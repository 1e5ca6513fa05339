"""`cogr-search serve --run RUN [--round R] [--host H] [--port P]`: the HTTP expansion
service (contract in `cogr_search/serve/app.py`)."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import context_index, live_context, opensearch_url, runs_dir, settings_from


@click.command()
@click.option("--run", "run_name", required=True, help="Run name (under --runs-dir) or path.")
@click.option("--round", "round_", type=int, default=None, help="Round (default: the latest complete round).")
@runs_dir
@click.option("--host", default=None, help="Address to bind [default: $COGR_SERVE_HOST, else 127.0.0.1].")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port [default: $COGR_SERVE_PORT, else 8300].")
@click.option("--cache-size", type=click.IntRange(min=0), default=10_000, show_default=True,
              help="LRU entries per side (0: no cache).")
@click.option("--max-batch", type=click.IntRange(min=1), default=16, show_default=True,
              help="Texts per generation call.")
@click.option("--max-wait-ms", type=click.FloatRange(min=0), default=2.0, show_default=True,
              help="How long a new text waits for others to share its generation call.")
@click.option("--generation-timeout", type=click.FloatRange(min=0.001), default=30.0, show_default=True,
              help="Seconds a request waits for the model before answering 504.")
@click.option("--max-texts", type=click.IntRange(min=1), default=64, show_default=True, help="Texts or items per request.")
@click.option("--max-text-chars", type=click.IntRange(min=1), default=1_000, show_default=True,
              help="Characters per query text or item title.")
@click.option("--max-description-chars", type=click.IntRange(min=1), default=20_000, show_default=True)
@click.option("--sides", type=click.Choice(["both", "query", "item"]), default="both", show_default=True,
              help="Which generators to load.")
@click.option("--sampling", type=click.Choice(["eval", "greedy"]), default="eval", show_default=True,
              help="Decoding preset (eval = T 0.7, top-p 0.8, top-k 20, seeded).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=None, help="Generation budget per text.")
@click.option("--backend", type=click.Choice(["auto", "transformers", "vllm"]), default="auto", show_default=True)
@context_index
@opensearch_url
def serve(run_name: str, round_: int | None, runs_dir: Path | None, host: str | None, port: int | None, cache_size: int,
          max_batch: int, max_wait_ms: float, generation_timeout: float, max_texts: int, max_text_chars: int,
          max_description_chars: int, sides: str, sampling: str, max_new_tokens: int | None, backend: str,
          context_index: str | None, opensearch_url: str | None) -> None:
    """Serve RUN's query and item generators over HTTP (POST /v1/expand/query, /v1/expand/item)."""
    from cogr_search.serve.limits import Limits
    from cogr_search.serve.server import serve as run_server
    from cogr_search.serve.service import ServiceConfig
    from cogr_search.runs.run_dir import RunDir

    settings = settings_from()
    host = host or settings.serve_host
    port = settings.serve_port if port is None else port
    config = ServiceConfig(cache_size=cache_size, max_batch=max_batch, max_wait_ms=max_wait_ms,
                           generation_timeout_s=generation_timeout)
    limits = Limits(max_texts=max_texts, max_text_chars=max_text_chars, max_description_chars=max_description_chars)
    options = {"sides": ("query", "item") if sides == "both" else (sides,), "backend": backend,
               "sampling": sampling, "max_new_tokens": max_new_tokens, "batch_size": max_batch,
               "context": live_context(RunDir.open(run_name, runs_dir), context_index, opensearch_url)}
    run_server(run_name, round_, host=host, port=port, runs_dir=runs_dir, config=config, limits=limits,
               expander_options=options, echo=lambda line: click.echo(line, err=True))
