"""`cogr-search eval` and `cogr-search report`: argument parsing and printing only.

The protocol lives in `cogr_search.evaluation`, the OpenSearch calls in
`cogr_search.cluster.eval`; this module wires the chosen method to them.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.progress import progress_wanted, quiet_library_bars
from cogr_search.data.split import DEFAULT_SEED, DEFAULT_VAL_FRACTION
from cogr_search.errors import InputError

METHODS = ("bm25", "cogr", "dense", "hybrid")


def _table(result: dict) -> str:
    """The human-readable form of one eval result."""
    s = result["settings"]
    ks = sorted(int(key.split("@")[1]) for key in result if key.startswith("MRR@"))
    from cogr_search.evaluation.report import method_name

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


def _cluster(opensearch_url: str | None):
    from cogr_search.connect import connect

    return connect(settings_from(opensearch_url=opensearch_url))


def _require_index(alias: str | None, method: str) -> str:
    if not alias:
        raise InputError(f"--method {method} needs --index NAME (the alias the catalog was ingested into)")
    return alias


def _connect_checked(opensearch_url: str | None, alias: str | None, method: str, dataset):
    """The cluster, after checking the alias exists and holds DATA's judged items; and how
    many of them it holds, for the report."""
    from cogr_search.evaluation.methods import check_index

    alias = _require_index(alias, method)
    cluster = _cluster(opensearch_url)
    overlap, warnings = check_index(cluster, alias, dataset)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    return cluster, alias, overlap


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
    from cogr_search.data import choose_split, load_dataset

    runs_dir = runs_dir or settings_from().runs_dir

    if method != "cogr" and (query_keywords or round_ is not None or backend != "opensearch" or expander != "auto"):
        raise InputError("--query-keywords, --round, --expander and --backend apply to --method cogr only")
    if method == "cogr" and (cutoff or tune_on):
        raise InputError("--cutoff and --tune-on apply to ranked baselines (bm25, dense), not cogr")
    if method == "cogr" and query_keywords is None and run is None:
        raise InputError("--method cogr needs --query-keywords FILE or --run RUN")
    if round_ is not None and run is None:
        raise InputError("--round needs --run RUN (the run whose round it is)")
    if run is not None and (val_fraction is not None or seed is not None):
        raise InputError("--val-fraction and --seed do not apply with --run: the run's own split.json is used")
    if out is not None:
        from cogr_search.atomic import check_writable

        check_writable(out)  # fail before the evaluation, not after it
    dataset = load_dataset(data, relevance_threshold=relevance_threshold)
    for note in dataset.notes:
        click.echo(f"note: {note}", err=True)
    dataset.require_threshold()
    from cogr_search.evaluation import methods

    if run is not None and split == "all":
        chosen = methods.split_of_other(dataset, run, runs_dir)
    elif run is not None:
        chosen = methods.split_of_run(dataset, run, runs_dir, split)
    else:
        chosen = choose_split(dataset, split, DEFAULT_VAL_FRACTION if val_fraction is None else val_fraction,
                              DEFAULT_SEED if seed is None else seed)
    tune_set = load_dataset(tune_on, relevance_threshold=relevance_threshold) if tune_on else None
    if tune_set is not None:
        tune_set.require_threshold()
    progress = progress_wanted(as_json)

    overlap = None
    if method == "dense":
        cache = settings_from().home / "cache" / "dense"
        result = methods.evaluate_dense(chosen, cache, tune_set, cutoff, depth, batch_size, progress)
    elif method == "bm25":
        cluster, alias, overlap = _connect_checked(opensearch_url, alias, method, chosen.evaluate)
        field_list = [f.strip() for f in fields.split(",") if f.strip()]
        result = methods.evaluate_bm25(cluster, alias, chosen, tune_set, cutoff, depth, field_list, batch_size, progress)
    elif method == "hybrid":
        cluster, alias, overlap = _connect_checked(opensearch_url, alias, method, chosen.evaluate)
        result = methods.evaluate_hybrid(cluster, alias, chosen, tune_set, cutoff, depth, batch_size, progress)
    else:
        cluster, alias, overlap = _connect_checked(opensearch_url, alias, method, chosen.evaluate)
        if query_keywords is None:
            cache = settings_from().home / "cache" / "eval-keywords"
            result = methods.evaluate_cogr_run(
                cluster, alias, chosen, run, cache, round_, runs_dir, backend, depth, batch_size, progress,
                expander=expander,
            )
        else:
            result = methods.evaluate_cogr_file(cluster, alias, chosen, query_keywords, run, round_, runs_dir,
                                                backend, depth, batch_size, progress)

    if overlap is not None:
        result["judged_items_in_index"] = overlap
    if out is not None:
        from cogr_search.atomic import atomic_open

        with atomic_open(out) as handle:  # an earlier result file is replaced whole or kept
            handle.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
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
        from cogr_search.evaluation.run_report import write_run_report
        from cogr_search.runs.run_dir import RunDir

        md, png = write_run_report(RunDir.open(run_name, runs_dir).root, markdown_path, plot_path)
        click.echo(f"wrote {md} and {png}")
        return
    if not results or markdown_path is None:
        raise click.UsageError("give eval result files and --markdown FILE, or --run RUN")
    from cogr_search.evaluation.report import load_reports, write_report

    reports = load_reports(list(results))
    write_report(reports, markdown_path, plot_path, title)
    click.echo(f"wrote {markdown_path}" + (f" and {plot_path}" if plot_path else ""))
