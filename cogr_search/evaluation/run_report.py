"""A training run's progress as a picture and a table (paper section 4.4, Figures 3-4).

Reads only the run's `metrics.json` (written by Phase 2 after every phase): validation
and training F1 of the shadow index per phase, and each side's keyword space (share of
unigram / bigram / 3+-word keywords, vocabulary sizes, their overlap).
"""

from __future__ import annotations

import json
from pathlib import Path

from cogr_search.atomic import check_writable
from cogr_search.errors import CogrError
from cogr_search.training.learning_check import learnt_nothing

NOTHING_LEARNT = " (nothing learnt)"

LENGTHS = ("unigram", "bigram", "3+")


def load_phases(metrics_path: Path) -> list[dict]:
    try:
        phases = json.loads(metrics_path.read_text(encoding="utf-8"))["phases"]
    except FileNotFoundError as err:
        raise CogrError(f"{metrics_path}: not found (run `cogr-search train rl` first)") from err
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise CogrError(f"{metrics_path}: not a cogr-search metrics file") from err
    if not phases:
        raise CogrError(f"{metrics_path}: no phase recorded yet")
    return phases


def run_markdown(name: str, phases: list[dict]) -> str:
    """One row per phase: shadow P/R/F1, mean reward, keyword-space shares and overlap."""
    lines = [
        f"# Training run {name}: phases",
        "",
        "| phase | val P | val R | val F1 | val F1 over samples | train F1 | mean reward | zero-std groups | "
        "query 1/2/3+ words | item 1/2/3+ words | query vocab | item vocab | query vocab in items |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in phases:
        space = p["keyword_space"]
        shares = {side: "/".join(f"{space[side][f'share_{n}']:.2f}" for n in LENGTHS) for side in ("query", "item")}
        reward = "-" if p.get("mean_reward") is None else f"{p['mean_reward']:.4f}"
        zero = "-" if p.get("zero_std_share") is None else f"{p['zero_std_share']:.2f}"
        samples = p.get("val_F1_samples")
        spread = f"{p['val_F1_mean']:.4f} ({min(samples):.4f}-{max(samples):.4f}, n={len(samples)})" if samples else "-"
        lines.append(
            f"| {p['phase']}{NOTHING_LEARNT if learnt_nothing(p) else ''} | {p['val']['P']:.4f} | {p['val']['R']:.4f} | {p['val']['F1']:.4f} | {spread} | "
            f"{p['train']['F1']:.4f} | {reward} | {zero} | {shares['query']} | {shares['item']} | "
            f"{space['query']['vocabulary']} | {space['item']['vocabulary']} | {space['query_vocabulary_in_items']:.2f} |"
        )
    val_queries = phases[0]["val"]["queries"]
    lines += ["", f"Shadow index, full retrieved sets; validation: {val_queries} held-out queries.", ""]
    notes = [f"- {p['phase']}: {p['no_learning']}" for p in phases if p.get("no_learning")]
    if any(learnt_nothing(p) for p in phases):
        lines += [f"Phases marked{NOTHING_LEARNT} had mean reward 0 or equal rewards in nearly every GRPO group: "
                  "no gradient, so their weights did not change.", *notes, ""]
    return "\n".join(lines)


def plot_run(name: str, phases: list[dict], path: Path) -> None:
    """Left: F1 per phase (validation and training). Right: keyword length shares per side."""
    try:
        import matplotlib  # heavy: matplotlib, off the CLI's start

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # heavy: matplotlib, off the CLI's start
    except ImportError as err:
        raise CogrError("plots need matplotlib: pip install 'cogr-search[report]'") from err
    labels = [p["phase"] for p in phases]
    x = list(range(len(phases)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), constrained_layout=True)
    left.plot(x, [p["val"]["F1"] for p in phases], marker="o", label="validation F1")
    left.plot(x, [p["train"]["F1"] for p in phases], marker="s", linestyle="--", label="training F1")
    if all(p.get("val_F1_samples") for p in phases):
        means = [p["val_F1_mean"] for p in phases]
        low = [min(p["val_F1_samples"]) for p in phases]
        high = [max(p["val_F1_samples"]) for p in phases]
        left.plot(x, means, marker="^", label=f"validation F1, mean of {len(phases[0]['val_F1_samples'])} samples")
        left.fill_between(x, low, high, alpha=0.2, label="validation F1, sample range")
    left.set_xticks(x, labels, rotation=30, ha="right")
    left.set_ylim(0, 1)
    left.set_ylabel("F1 (shadow index, full retrieved set)")
    left.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    width = 0.4
    for offset, side in ((-width / 2, "query"), (width / 2, "item")):
        bottom = [0.0] * len(phases)
        for n, colour in zip(LENGTHS, ("#4c72b0", "#dd8452", "#55a868")):
            values = [p["keyword_space"][side][f"share_{n}"] for p in phases]
            right.bar([i + offset for i in x], values, width * 0.95, bottom=bottom, color=colour,
                      label=f"{n}" if side == "query" else None, hatch="" if side == "query" else "//")
            bottom = [b + v for b, v in zip(bottom, values)]
    right.set_xticks(x, labels, rotation=30, ha="right")
    right.set_ylabel("share of keywords (left bar: queries, hatched: items)")
    right.set_ylim(0, 1)
    right.legend(fontsize=8, title="words per keyword")
    fig.suptitle(f"Run {name}: validation F1 and keyword space per phase")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_run_report(run_root: Path, markdown_path: Path | None = None, png_path: Path | None = None) -> tuple[Path, Path]:
    """`<run>/phases.md` and `<run>/phases.png` (or the given paths) from metrics.json."""
    phases = load_phases(run_root / "metrics.json")
    markdown_path = markdown_path or run_root / "phases.md"
    png_path = png_path or run_root / "phases.png"
    for path in (markdown_path, png_path):
        check_writable(path)  # both, before either is written
    plot_run(run_root.name, phases, png_path)
    text = run_markdown(run_root.name, phases) + f"\n![F1 and keyword space per phase]({png_path.name})\n"
    markdown_path.write_text(text, encoding="utf-8")
    return markdown_path, png_path
