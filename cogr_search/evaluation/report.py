"""Side-by-side reports from saved eval results (`cogr-search eval ... --out X.json`).

A search team compares methods on its own labelled queries in one table; the PNG shows
precision and recall as the per-query cutoff grows, one line per method, which is where
a fixed top-K baseline and CoGR's variable-size retrieved set differ. With two results
or more, every method is tested against the first file (the baseline) query by query
(`significance.py`), so the table says whether a gap is more than luck on these
queries. matplotlib is imported only when a plot is drawn (the `report` extra).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from cogr_search.errors import CogrError, InputError
from cogr_search.evaluation.significance import (
    DEFAULT_RESAMPLES, DEFAULT_SEED, PairedTest, check_same_queries, format_p, paired_test,
)
from cogr_search.atomic import check_writable

MAIN_COLUMNS = ("P", "R", "F1", "MRR@100", "NDCG@100", "P@100", "R@100", "F1@100")
CUTOFF_COLUMNS = ("MRR@10", "NDCG@10", "P@10", "R@10", "F1@10", "MRR@1000", "NDCG@1000", "P@1000", "R@1000", "F1@1000")
REQUIRED = ("method", "P", "R", "F1", "queries")
TESTED = ("F1", "NDCG@10")  # the set metric CoGR optimises, and the usual ranking metric


def load_reports(paths: Sequence[Path]) -> list[dict]:
    reports = []
    for path in paths:
        try:
            report = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"{path}: not a readable eval report ({err.__class__.__name__}: {err})") from None
        missing = [key for key in REQUIRED if key not in report] if isinstance(report, dict) else ["(not an object)"]
        if missing:
            raise InputError(f"{path}: not an eval report (missing {missing[0]!r}); write one with `cogr-search eval ... --out FILE`")
        reports.append(report)
    if not reports:
        raise InputError("no eval reports given")
    for path, report in zip(paths[1:], reports[1:]):
        check_same_queries(str(paths[0]), reports[0], str(path), report)
    return reports


def method_name(report: dict) -> str:
    """The method with what made its keywords: two cogr reports of one run, one from the
    student and one from the LLM, must not read the same."""
    settings = report.get("settings", {})
    parts = [f"{settings['expander']} expander"] if settings.get("expander") else []
    if settings.get("run") is not None:
        parts.append(f"run {Path(str(settings['run'])).name}" +
                     (f" round {settings['round']}" if settings.get("round") is not None else ""))
    return f"{report['method']} ({', '.join(parts)})" if parts else str(report["method"])


def label(report: dict) -> str:
    settings = report.get("settings", {})
    return f"{method_name(report)} ({settings.get('dataset', '?')}, {settings.get('split', 'all')})"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def _table(reports: Sequence[dict], columns: Sequence[str], lead: Sequence[str],
           extra: tuple[str, Sequence[str]] | None = None) -> list[str]:
    """One row per report; `extra` is one more column (its header, one cell per report)."""
    header = [*lead, *columns, *([extra[0]] if extra else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for position, report in enumerate(reports):
        settings = report.get("settings", {})
        values = {
            "method": method_name(report),
            "dataset": settings.get("dataset", ""),
            "split": settings.get("split", "all"),
            "queries": report["queries"],
            "cutoff": settings.get("cutoff", "set"),
            "queries/s": report.get("queries_per_s"),
        }
        qps = values["queries/s"]
        values["queries/s"] = f"{qps:.1f}" if isinstance(qps, (int, float)) else qps
        row = [_cell(values[c]) for c in lead] + [_cell(report.get(c)) for c in columns]
        if extra:
            row.append(extra[1][position])
        lines.append("| " + " | ".join(row) + " |")
    return lines


def paired_tests(reports: Sequence[dict], metric: str, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = DEFAULT_SEED) -> list[PairedTest | None]:
    """Every report after the first against the first on `metric` (None: no per-query values)."""
    base = reports[0]
    return [paired_test(base, r, metric, resamples, seed, method_name(base), method_name(r)) for r in reports[1:]]


def _p_column(metric: str, tests: Sequence[PairedTest | None]) -> tuple[str, list[str]]:
    return f"p {metric}", ["baseline", *(format_p(t.p_value) if t else "n/a" for t in tests)]


def _test_note(reports: Sequence[dict], tests: Mapping[str, Sequence[PairedTest | None]]) -> list[str]:
    """What the p columns are, the test's resamples and seed, and how to read them."""
    done = [t for row in tests.values() for t in row if t is not None]
    lines = []
    if done:
        lines.append(
            f"p {', p '.join(tests)}: each method against the first row ({method_name(reports[0])}), {done[0].how()}, "
            "computed by `scipy.stats.permutation_test`. p is how often the mean difference would lie at least this far from "
            "zero if the two methods were interchangeable on these queries. A small p (below 0.05, the usual bar; "
            "ask for less when many methods are compared with one baseline) says the gap is unlikely to be luck of "
            "these queries; a large p says these queries cannot tell the two apart, not that they are equal."
        )
    if len(done) < sum(len(row) for row in tests.values()):
        lacking = [label(r) for r in reports if not isinstance(r.get("per_query"), dict)]
        where = f" in {', '.join(lacking)}" if lacking else ""
        lines.append(f"n/a: no per-query values{where} (an eval file written before they were saved, or an @k "
                     "beyond its ranking depth); rerun `cogr-search eval ... --out FILE` to test it.")
    return lines


def markdown(reports: Sequence[dict], title: str = "Retrieval evaluation", plot_name: str | None = None,
             resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> str:
    """The comparison as Markdown: main table (paper Table 2 columns), then @10/@1000;
    with two results or more, each table ends in a p-value against the first row."""
    tests = {metric: paired_tests(reports, metric, resamples, seed) for metric in TESTED} if len(reports) > 1 else {}
    main_p = _p_column("F1", tests["F1"]) if tests else None
    cutoff_p = _p_column("NDCG@10", tests["NDCG@10"]) if tests else None
    lines = [f"# {title}", ""]
    lines += _table(reports, MAIN_COLUMNS, ("method", "dataset", "split", "queries", "cutoff", "queries/s"), main_p)
    lines += ["", "Cutoffs 10 and 1000:", ""]
    lines += _table(reports, CUTOFF_COLUMNS, ("method", "dataset", "split"), cutoff_p)
    if tests:
        lines += ["", *_test_note(reports, tests)]
    lines += [
        "",
        "P, R, F1: macro averages over the full retrieved set (ranked baselines: the top `cutoff` items, "
        "the cutoff chosen for best F1 on the tuning queries; cogr: every item whose keywords match). "
        "Queries with no relevant item are skipped.",
        "",
        "Settings:",
        "",
    ]
    for report in reports:
        settings = {k: v for k, v in report.get("settings", {}).items()}
        lines.append(f"- {label(report)}: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    if plot_name:
        lines += ["", f"![precision and recall per cutoff]({plot_name})"]
    return "\n".join(lines) + "\n"


def plot(reports: Sequence[dict], path: Path) -> None:
    """Precision, recall and F1 against the per-query cutoff k (log scale), one line per method."""
    try:
        import matplotlib  # heavy: matplotlib, off the CLI's start

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # heavy: matplotlib, off the CLI's start
    except ImportError as err:
        raise CogrError("plots need matplotlib: pip install 'cogr-search[report]'") from err
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
    for report in reports:
        curve = report.get("curve")
        if not curve:
            continue
        for axis, key in zip(axes, ("P", "R", "F1")):
            axis.plot(curve["k"], curve[key], marker="o", markersize=3, label=label(report))
    for axis, key in zip(axes, ("precision", "recall", "F1")):
        axis.set_xscale("log")
        axis.set_xlabel("cutoff k (top k per query)")
        axis.set_ylabel(key)
        axis.set_ylim(0, 1)
        axis.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Precision / recall / F1 per cutoff")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(reports: Sequence[dict], markdown_path: Path, png_path: Path | None, title: str = "Retrieval evaluation",
                 resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> None:
    for path in (markdown_path, png_path):
        if path is not None:
            check_writable(path)  # both, before either is written
    if png_path is not None:
        plot(reports, png_path)
    plot_name = None
    if png_path is not None:
        try:
            plot_name = str(png_path.resolve().relative_to(markdown_path.resolve().parent))
        except ValueError:
            plot_name = str(png_path)
    markdown_path.parent.mkdir(parents=True, exist_ok=True)
    markdown_path.write_text(markdown(reports, title, plot_name, resamples, seed), encoding="utf-8")
