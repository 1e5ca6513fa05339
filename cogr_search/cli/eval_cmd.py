"""`cogr-search eval` and `cogr-search report`: argument parsing and printing only.

The options' rules and the protocol live in `cogr_search.evaluation` (`request.evaluate`),
the cluster calls in `cogr_search.cluster.eval`.
"""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.connect import connect
from cogr_search.data.split import DEFAULT_SEED, DEFAULT_VAL_FRACTION
from cogr_search.evaluation.report import load_reports, method_name, write_report
from cogr_search.evaluation.request import METHODS, EvalRequest, evaluate
from cogr_search.evaluation.run_report import write_run_report
from cogr_search.progress import progress_wanted, quiet_library_bars
from cogr_search.runs.run_dir import RunDir



def _table(result: dict) -> str:
    """The human-readable form of one eval result."""
    s = result["settings"]
    ks = sorted(int(key.split("@")[1]) for key in result if key.startswith("MRR@"))
    head = (
        f"{method_name(result)} on {s['dataset']} (split {s['split']}, {result['queries']} queries scored, "
        f"relevant = score >= {s['relevance_threshold']:g})"
    )
    how = f"cutoff {s['cutoff']} ({s['cutoff_source']})" if "cutoff" in s else "full keyword-matched set"
    lines = [head, f"{how}; {result['queries_per_s']} queries/s", ""]
    if "judged_items_in_index" in result:
        judged = result["judged_items_in_index"]
        lines.insert(2, f"judged items in the index: {judged['present']} of {judged['judged']} ({judged['share']:.1%})")
    lines.append(f"{'':<10}{'P':>8}{'R':>8}{'F1':>8}")
    lines.append(f"{'full set':<10}{result['P']:>8.4f}{result['R']:>8.4f}{result['F1']:>8.4f}")
    lines.append("")
    lines.append(f"{'k':<10}{'MRR':>8}{'NDCG':>8}{'P':>8}{'R':>8}{'F1':>8}")
    for k in ks:
        row = [result[f"{m}@{k}"] for m in ("MRR", "NDCG", "P", "R", "F1")]
        lines.append(f"{k:<10}" + "".join(f"{v:>8.4f}" for v in row))
    return "\n".join(lines)


@click.command("eval")
@click.option("--data", "data", required=True, type=click.Path(exists=True, path_type=Path), help="Labelled dataset (BEIR, WANDS or cogr-dataset.json directory).")
@click.option("--index", "alias", default=None, help="Alias holding the catalog (bm25, cogr).")
@click.option("--method", type=click.Choice(METHODS), required=True)
@click.option("--split", type=click.Choice(("train", "val", "all")), default="val", show_default=True,
              help="Score the validation queries (baselines tuned on the training ones), the training queries, "
                   "or every query (baselines then need --cutoff or --tune-on). With --run: the run's own split; "
                   "all with --run: every query of DATA, refused when one is a training query of the run.")
@click.option("--val-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help=f"Share of queries held out for validation [default: {DEFAULT_VAL_FRACTION}; with --run: the run's].")
@click.option("--seed", type=int, default=None, help=f"Seed of the query split [default: {DEFAULT_SEED}; with --run: the run's].")
@click.option("--relevance-threshold", type=float, default=None, help="Relevant = score >= X [default: the dataset's cogr-dataset.json or known description; else refused].")
@click.option("--cutoff", type=click.IntRange(1), default=None, help="bm25/dense: fix the top-K cutoff for P/R/F1 instead of tuning it.")
@click.option("--tune-on", type=click.Path(exists=True, path_type=Path), default=None,
              help="bm25/dense: choose the cutoff on this labelled query set (same catalog).")
@click.option("--depth", type=click.IntRange(1, 10_000), default=1000, show_default=True, help="Ranked list length per query.")
@click.option("--fields", default="title,description", show_default=True, help="bm25: fields to match (OpenSearch syntax, boosts allowed).")
@click.option("--query-keywords", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="cogr: query keyword file (JSONL of {id, keywords}).")
@click.option("--run", "run", default=None,
              help="Score the queries this run held out (its split.json); cogr without --query-keywords: "
                   "generate their keywords with the run's query generator.")
@click.option("--round", "round_", type=int, default=None, help="cogr --run: round (default: the latest complete round).")
@click.option("--expander", type=click.Choice(("auto", "student", "llm")), default="auto", show_default=True,
              help="cogr --run: auto takes the round's students when it has them, else its query generator.")
@runs_dir
@click.option("--backend", type=click.Choice(("opensearch", "shadow")), default="opensearch", show_default=True,
              help="cogr: query OpenSearch, or a shadow index built from the index's keywords.")
@click.option("--batch-size", type=click.IntRange(1, 1000), default=64, show_default=True, help="Searches per _msearch / texts per embedding batch.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write the result as JSON here.")
@opensearch_url
@json_output
def eval_command(
    data: Path,
    alias: str | None,
    method: str,
    split: str | None,
    val_fraction: float | None,
    seed: int | None,
    relevance_threshold: float | None,
    cutoff: int | None,
    tune_on: Path | None,
    depth: int,
    fields: str,
    query_keywords: Path | None,
    run: str | None,
    round_: int | None,
    expander: str,
    runs_dir: Path | None,
    backend: str,
    batch_size: int,
    out: Path | None,
    opensearch_url: str | None,
    as_json: bool,
) -> None:
    """Score METHOD on DATA's labelled queries: P, R, F1, MRR/NDCG/P/R/F1 @ 10, 100, 1000."""
    quiet_library_bars(as_json)
    settings = settings_from(opensearch_url=opensearch_url, runs_dir=runs_dir)
    request = EvalRequest(data=data, method=method, alias=alias, split=split, val_fraction=val_fraction, seed=seed,
                          relevance_threshold=relevance_threshold, cutoff=cutoff, tune_on=tune_on, depth=depth,
                          fields=fields, query_keywords=query_keywords, run=run, round=round_, expander=expander,
                          backend=backend, batch_size=batch_size, out=out)
    result = evaluate(request, settings, lambda: connect(settings), progress_wanted(as_json),
                      notify=lambda line: click.echo(line, err=True))
    if as_json:
        emit_json(result)
    else:
        click.echo(_table(result))


@click.command("report")
@click.argument("results", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--run", "run_name", default=None,
              help="A training run: its phases (validation F1, keyword space) from metrics.json, as Markdown + PNG.")
@runs_dir
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Markdown table to write (with --run: default <run>/phases.md).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="PNG plot: P/R/F1 per cutoff, or with --run F1 and keyword space per phase (<run>/phases.png).")
@click.option("--title", default="Retrieval evaluation", show_default=True)
def report_command(results: tuple[Path, ...], run_name: str | None, runs_dir: Path | None, markdown_path: Path | None,
                   plot_path: Path | None, title: str) -> None:
    """Compare saved eval results (from `eval --out FILE`) side by side, or show a
    training run's phases (`--run`): Markdown + PNG."""
    if run_name is not None:
        md, png = write_run_report(RunDir.open(run_name, runs_dir).root, markdown_path, plot_path)
        click.echo(f"wrote {md} and {png}")
        return
    if not results or markdown_path is None:
        raise click.UsageError("give eval result files and --markdown FILE, or --run RUN")
    reports = load_reports(list(results))
    write_report(reports, markdown_path, plot_path, title)
    click.echo(f"wrote {markdown_path}" + (f" and {plot_path}" if plot_path else ""))
