"""`cogr-search eval` and `cogr-search report`: argument parsing and printing only.

The protocol lives in `cogr_search.evaluation`, the OpenSearch calls in
`cogr_search.opensearch.eval`; this module wires the chosen method to them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from cogr_search.cli.options import emit_json, json_output, opensearch_url, settings_from
from cogr_search.errors import CogrError, InputError

METHODS = ("bm25", "cogr", "dense")


def _table(result: dict) -> str:
    """The human-readable form of one eval result."""
    s = result["settings"]
    ks = sorted(int(key.split("@")[1]) for key in result if key.startswith("MRR@"))
    head = (
        f"{result['method']} on {s['dataset']} (split {s['split']}, {result['queries']} queries scored, "
        f"relevant = score >= {s['relevance_threshold']:g})"
    )
    how = f"cutoff {s['cutoff']} ({s['cutoff_source']})" if "cutoff" in s else "full keyword-matched set"
    lines = [head, f"{how}; {result['queries_per_s']} queries/s", ""]
    lines.append(f"{'':<10}{'P':>8}{'R':>8}{'F1':>8}")
    lines.append(f"{'full set':<10}{result['P']:>8.4f}{result['R']:>8.4f}{result['F1']:>8.4f}")
    lines.append("")
    lines.append(f"{'k':<10}{'MRR':>8}{'NDCG':>8}{'P':>8}{'R':>8}{'F1':>8}")
    for k in ks:
        row = [result[f"{m}@{k}"] for m in ("MRR", "NDCG", "P", "R", "F1")]
        lines.append(f"{k:<10}" + "".join(f"{v:>8.4f}" for v in row))
    return "\n".join(lines)


def _cluster(opensearch_url: str | None):
    from cogr_search.opensearch.client import connect

    return connect(settings_from(opensearch_url=opensearch_url))


def _require_index(alias: str | None, method: str) -> str:
    if not alias:
        raise InputError(f"--method {method} needs --index NAME (the alias the catalog was ingested into)")
    return alias


def _check_index_size(cluster, alias: str, n_items: int) -> int:
    """Fail early on a missing or empty index; warn when it does not match DATA."""
    if not cluster.call(cluster.client.indices.exists, index=alias):
        raise CogrError(f"index {alias!r} does not exist at {cluster.url}: run `cogr-search ingest DATA --index {alias}` first")
    count = cluster.call(cluster.client.count, index=alias)["count"]
    if count == 0:
        raise CogrError(f"index {alias!r} is empty: run `cogr-search ingest DATA --index {alias}` first")
    if count != n_items:
        click.echo(f"warning: index {alias!r} holds {count} documents, DATA has {n_items} items", err=True)
    return count


@click.command("eval")
@click.option("--data", "data", required=True, type=click.Path(exists=True, path_type=Path), help="Labelled dataset (BEIR, WANDS or cogr-dataset.json directory).")
@click.option("--index", "alias", default=None, help="Alias holding the catalog (bm25, cogr).")
@click.option("--method", type=click.Choice(METHODS), required=True)
@click.option("--split", type=click.Choice(("train", "val", "all")), default=None,
              help="Evaluate the seeded validation or training queries (default: every query of DATA).")
@click.option("--val-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.1, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the query split.")
@click.option("--relevance-threshold", type=float, default=None, help="Relevant = score >= X (default: per dataset).")
@click.option("--cutoff", type=click.IntRange(1), default=None, help="bm25/dense: fix the top-K cutoff for P/R/F1 instead of tuning it.")
@click.option("--tune-on", type=click.Path(exists=True, path_type=Path), default=None,
              help="bm25/dense: choose the cutoff on this labelled query set (same catalog).")
@click.option("--depth", type=click.IntRange(1, 10_000), default=1000, show_default=True, help="Ranked list length per query.")
@click.option("--fields", default="title,description", show_default=True, help="bm25: fields to match (OpenSearch syntax, boosts allowed).")
@click.option("--query-keywords", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="cogr: query keyword file (JSONL of {id, keywords}).")
@click.option("--run", "run", default=None, help="cogr: generate query keywords with this run's query generator.")
@click.option("--round", "round_", type=int, default=None, help="cogr --run: round (default: the latest complete round).")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None, envvar="COGR_RUNS_DIR",
              help="cogr --run: folder of runs (default: ./runs).")
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
    val_fraction: float,
    seed: int,
    relevance_threshold: float | None,
    cutoff: int | None,
    tune_on: Path | None,
    depth: int,
    fields: str,
    query_keywords: Path | None,
    run: str | None,
    round_: int | None,
    runs_dir: Path | None,
    backend: str,
    batch_size: int,
    out: Path | None,
    opensearch_url: str | None,
    as_json: bool,
) -> None:
    """Score METHOD on DATA's labelled queries: P, R, F1, MRR/NDCG/P/R/F1 @ 10, 100, 1000."""
    from cogr_search.data import choose_split, load_dataset

    if method != "cogr" and (query_keywords or run or round_ is not None or backend != "opensearch"):
        raise InputError("--query-keywords, --run, --round and --backend apply to --method cogr only")
    if method == "cogr" and (cutoff or tune_on):
        raise InputError("--cutoff and --tune-on apply to ranked baselines (bm25, dense), not cogr")
    dataset = load_dataset(data, relevance_threshold=relevance_threshold)
    for note in dataset.notes:
        click.echo(f"note: {note}", err=True)
    chosen = choose_split(dataset, split, val_fraction, seed)
    tune_set = load_dataset(tune_on, relevance_threshold=relevance_threshold) if tune_on else None
    progress = sys.stderr.isatty()
    split_settings = {"val_fraction": val_fraction, "seed": seed} if chosen.split != "all" else {}

    if method == "bm25":
        result = _eval_bm25(chosen, tune_set, cutoff, depth, fields, batch_size, alias, opensearch_url, progress, split_settings)
    elif method == "dense":
        result = _eval_dense(chosen, tune_set, cutoff, depth, batch_size, progress, split_settings)
    else:
        run_spec = (run, round_, runs_dir)
        result = _eval_cogr(chosen, depth, query_keywords, run_spec, backend, batch_size, alias, opensearch_url, progress, split_settings)

    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if as_json:
        emit_json(result)
    else:
        click.echo(_table(result))


def _eval_bm25(chosen, tune_set, cutoff, depth, fields, batch_size, alias, opensearch_url, progress, extra) -> dict:
    from cogr_search.evaluation.runner import evaluate_ranked
    from cogr_search.opensearch.eval import bm25_ranker

    alias = _require_index(alias, "bm25")
    cluster = _cluster(opensearch_url)
    _check_index_size(cluster, alias, len(chosen.evaluate.items))
    field_list = [f.strip() for f in fields.split(",") if f.strip()]
    rank = bm25_ranker(cluster, alias, depth, field_list, batch_size, progress)
    settings = {"index": alias, "opensearch": cluster.url, "fields": field_list, "query": "multi_match most_fields", **extra}
    return evaluate_ranked("bm25", rank, chosen, cutoff=cutoff, tune_on=tune_set, depth=depth, settings=settings)


def _eval_dense(chosen, tune_set, cutoff, depth, batch_size, progress, extra) -> dict:
    from cogr_search.evaluation.dense import MODEL_NAME, build_dense_index, dense_ranker
    from cogr_search.evaluation.runner import evaluate_ranked

    cache = settings_from().home / "cache" / "dense"
    index = build_dense_index(chosen.evaluate.items, cache, batch_size=batch_size, progress=progress)
    settings = {
        "model": MODEL_NAME,
        "similarity": "cosine, exact",
        "item_embedding_seconds": round(index.index_seconds, 3),
        "item_embeddings_cached": index.from_cache,
        "embedding_cache": str(cache),
        **extra,
    }
    return evaluate_ranked("dense", dense_ranker(index, depth), chosen, cutoff=cutoff, tune_on=tune_set, depth=depth, settings=settings)


def _eval_cogr(chosen, depth, query_keywords, run_spec, backend, batch_size, alias, opensearch_url, progress, extra) -> dict:
    from cogr_search.evaluation.cogr import evaluate_cogr

    run, round_, runs_dir = run_spec
    if (query_keywords is None) == (run is None):
        raise InputError("--method cogr needs exactly one of --query-keywords FILE or --run RUN")
    alias = _require_index(alias, "cogr")
    cluster = _cluster(opensearch_url)
    _check_index_size(cluster, alias, len(chosen.evaluate.items))
    extra = dict(extra)
    if run is not None:
        from cogr_search.evaluation.run_keywords import query_keywords_from_run

        generated = query_keywords_from_run(
            run, chosen.evaluate.queries, settings_from().home / "cache" / "eval-keywords", round_, runs_dir, progress=progress
        )
        query_keywords = generated.path
        extra.update({"run": generated.run, "round": generated.round, "query_model": generated.model,
                      "query_keywords_generated": generated.generated, "query_keywords_reused": generated.reused,
                      "query_generation_seconds": round(generated.seconds, 3)})
    return evaluate_cogr(cluster, alias, chosen, query_keywords, backend, depth, batch_size, progress, extra)


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Markdown table to write.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="PNG plot of P/R/F1 per cutoff.")
@click.option("--title", default="Retrieval evaluation", show_default=True)
def report_command(results: tuple[Path, ...], markdown_path: Path, plot_path: Path | None, title: str) -> None:
    """Compare saved eval results (from `eval --out FILE`) side by side: Markdown + PNG."""
    from cogr_search.evaluation.report import load_reports, write_report

    reports = load_reports(list(results))
    write_report(reports, markdown_path, plot_path, title)
    click.echo(f"wrote {markdown_path}" + (f" and {plot_path}" if plot_path else ""))
