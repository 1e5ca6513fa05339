"""`cogr-search expand "text" --run RUN [--round R] [--expander student|llm]`: a query's
keywords from a run's expander, one per line (or `--json`);
`cogr-search expand --file queries.jsonl --out keywords.jsonl --run RUN`: every query of a
BEIR query file (`{"_id", "text"}` lines) into a keyword file (`{"id", "keywords"}`)."""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import context_index, emit_json, json_output, live_context, opensearch_url, runs_dir
from cogr_search.progress import progress_bar, progress_wanted, quiet_library_bars
import time
from cogr_search.errors import InputError
from cogr_search.runs.run_dir import RunDir
from cogr_search.serve.expander import open_expander
from cogr_search.atomic import check_writable
from cogr_search.data.beir import read_queries
from cogr_search.runs.keyword_files import write_keyword_file

EXPANDER_HELP = "auto: the round's students when it has them (train distill), else the LLM generators."


@click.command()
@click.argument("text", required=False)
@click.option("--file", "query_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A query file (JSONL, one {\"_id\", \"text\"} a line) to expand instead of TEXT.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --file: the keyword file to write (JSONL, one {\"id\", \"keywords\"} a line).")
@click.option("--run", "run_name", required=True, help="Run name (under --runs-dir) or path.")
@click.option("--round", "round_", type=int, default=None, help="Round (default: the latest complete round).")
@runs_dir
@click.option("--expander", type=click.Choice(["auto", "student", "llm"]), default="auto", show_default=True,
              help=EXPANDER_HELP)
@click.option("--sampling", type=click.Choice(["eval", "greedy", "rollout"]), default="eval", show_default=True,
              help="LLM decoding preset (paper Table 5; eval = T 0.7, top-p 0.8, top-k 20).")
@click.option("--seed", type=int, default=0, show_default=True, help="LLM sampling seed, for repeatable output.")
@click.option("--backend", type=click.Choice(["auto", "transformers", "vllm"]), default="auto", show_default=True)
@context_index
@opensearch_url
@json_output
def expand(text: str | None, query_file: Path | None, out_file: Path | None, run_name: str, round_: int | None,
           runs_dir: Path | None, expander: str, sampling: str, seed: int, backend: str, context_index: str | None,
           opensearch_url: str | None, as_json: bool) -> None:
    """Print the query expander's keywords for TEXT (truncated to the run's k_max), or
    write those of every query in --file to --out."""
    quiet_library_bars(as_json)

    if query_file is not None:
        if text is not None or out_file is None:
            raise InputError("expand --file: give --out FILE and no TEXT")
    elif text is None or not text.strip():
        raise InputError("expand: the query text is empty")
    elif out_file is not None:
        raise InputError("expand --out: only with --file")
    queries = None
    if query_file is not None:
        queries = read_queries(query_file)
        if not queries:
            raise InputError(f"{query_file}: no queries")
        check_writable(out_file)  # type: ignore[arg-type]
    run = RunDir.open(run_name, runs_dir)
    context = live_context(run, context_index, opensearch_url) if expander != "student" else None
    chosen = open_expander(run.root, round_, expander=expander, sides=("query",), sampling=sampling, seed=seed,
                           backend=backend, context=context, batch_size=1 if query_file is None else 16)
    try:
        if query_file is not None:
            _expand_file(chosen, query_file, queries, out_file, as_json)  # type: ignore[arg-type]
            return
        keywords = chosen.expand_queries([text])[0]  # type: ignore[list-item]
    finally:
        chosen.close()
    if as_json:
        emit_json({"query": text, "keywords": keywords, "run": run.name, "round": chosen.round,
                   "expander": chosen.kind, "model": chosen.model, "sampling": sampling, "seed": seed,
                   "backend": getattr(chosen, "backend", None)})  # the LLM's engine; None for students
        return
    for keyword in keywords:
        click.echo(keyword)


def _expand_file(expander: object, query_file: Path, queries: dict, out_file: Path, as_json: bool) -> None:
    started = time.perf_counter()
    ids = list(queries)
    keywords: list[list[str]] = []
    batch = 256 if expander.kind == "student" else 16  # type: ignore[attr-defined]  # an LLM batch takes seconds
    with progress_bar(len(ids), f"expand {query_file.name}", "query", progress_wanted(as_json)) as bar:
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            keywords.extend(expander.expand_queries([queries[q].text for q in chunk]))  # type: ignore[attr-defined]
            bar.update(len(chunk))
    rows = write_keyword_file(out_file, zip(ids, keywords))
    seconds = time.perf_counter() - started
    summary = {"file": str(query_file), "out": str(out_file), "queries": rows, "seconds": round(seconds, 3),
               "run": expander.run, "round": expander.round, "expander": expander.kind,  # type: ignore[attr-defined]
               "model": expander.model, "backend": getattr(expander, "backend", None)}  # type: ignore[attr-defined]
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"{rows} queries -> {out_file} ({expander.kind} expander, {seconds:.2f} s)", err=True)  # type: ignore[attr-defined]
