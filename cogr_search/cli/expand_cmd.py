"""`cogr-search expand "text" --run RUN [--round R]`: a query's keywords from a run's
query generator, one per line (or `--json`)."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import context_index, emit_json, json_output, live_context, opensearch_url, runs_dir


@click.command()
@click.argument("text")
@click.option("--run", "run_name", required=True, help="Run name (under --runs-dir) or path.")
@click.option("--round", "round_", type=int, default=None, help="Round (default: the latest complete round).")
@runs_dir
@click.option("--sampling", type=click.Choice(["eval", "greedy", "rollout"]), default="eval", show_default=True,
              help="Decoding preset (paper Table 5; eval = T 0.7, top-p 0.8, top-k 20).")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed, for repeatable output.")
@click.option("--backend", type=click.Choice(["auto", "transformers", "vllm"]), default="auto", show_default=True)
@context_index
@opensearch_url
@json_output
def expand(text: str, run_name: str, round_: int | None, runs_dir: Path | None, sampling: str, seed: int,
           backend: str, context_index: str | None, opensearch_url: str | None, as_json: bool) -> None:
    """Print the query generator's keywords for TEXT (truncated to the run's k_max)."""
    from cogr_search.errors import InputError
    from cogr_search.generators.backend import preset
    from cogr_search.runs.run_dir import RunDir
    from cogr_search.runs.models import open_generator

    if not text.strip():
        raise InputError("expand: the query text is empty")
    run = RunDir.open(run_name, runs_dir)
    generator, round_ = open_generator(run, "query", round_, backend=backend,
                                       context=live_context(run, context_index, opensearch_url))
    params = preset(sampling, seed=seed)
    try:
        parsed = generator.generate([text], params, batch_size=1)[0]
    finally:
        generator.close()
    keywords = parsed.keywords[: generator.k_max]
    if as_json:
        emit_json({"query": text, "keywords": keywords, "oversized": parsed.oversized, "run": run.name,
                   "round": round_, "sampling": sampling, "seed": seed})
        return
    for keyword in keywords:
        click.echo(keyword)
