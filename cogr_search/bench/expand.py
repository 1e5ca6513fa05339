"""`cogr-search bench expand --run RUN`: how fast and how faithful a round's students are.

- `student_p50_ms` / `student_p99_ms`: one held-out query at a time, one thread, the
  student loaded (every query timed `repeats` times);
- `llm_cold_p50_ms`: the same queries' first expansion by the LLM query generator
  (`llm_samples` of them; 0 skips it, and a run without checkpoints has none);
- `student_items_per_s`: the item student over the whole catalog of the run's data (or
  of `catalog`: a run trained on a subset predicts the full catalog);
- `fidelity_f1`: held-out F1 with the student's query keywords divided by F1 with the
  teacher's (the round's query keyword file), both against the same item index: the
  shadow index of the round's item keywords (what training's rewards and `eval
  --backend shadow` use);
- model size on disk, load time, and the resident memory the students added.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from cogr_search.bench.search import percentile
from cogr_search.data import load_dataset
from cogr_search.errors import CogrError
from cogr_search.metrics import f1
from cogr_search.progress import progress_bar
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.runs.run_dir import RunDir, read_json
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.query_view import QueryView
import psutil
from cogr_search.generators.students.distill import students_folder
from cogr_search.serve.expander import RunExpander, StudentExpander


def _rss_mb() -> float:
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


def _folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def _macro_f1(view: QueryView) -> tuple[float, int]:
    """Macro F1 over the view's queries that have a relevant item (as training reports it)."""
    scored = [f1(int(t), int(r), int(n)) for t, r, n in zip(view.n_tp, view.n_ret, view.n_rel) if n > 0]
    return (sum(scored) / len(scored) if scored else 0.0), len(scored)


def _timed(calls: Sequence, repeats: int, desc: str, progress: bool) -> list[float]:
    out = []
    with progress_bar(repeats * len(calls), desc, "call", progress) as bar:
        for _ in range(repeats):
            for call in calls:
                started = time.perf_counter()
                call()
                out.append((time.perf_counter() - started) * 1000.0)
                bar.update(1)
    return out


def run(run_name: str, round_: int | None = None, *, runs_dir: Path | None = None, split: str = "val",
        repeats: int = 5, llm_samples: int = 5, catalog: Path | None = None, progress: bool = False) -> dict:

    run_dir = RunDir.open(run_name, runs_dir)
    spec = run_dir.serving_spec(round_)
    dataset = load_dataset(Path(run_dir.config().data))
    recorded = read_json(run_dir.split_path)
    query_ids = [q for q in recorded.get(f"{split}_queries", []) if q in dataset.queries]
    if not query_ids:
        raise CogrError(f"{run_dir.split_path}: no {split} queries to measure on")
    texts = {q: dataset.queries[q].text for q in query_ids}

    rss_before = _rss_mb()
    started = time.perf_counter()
    student = StudentExpander(run_dir.root, spec.round)
    load_s = time.perf_counter() - started
    rss_students = _rss_mb() - rss_before
    student.expand_queries(list(texts.values())[:5])  # first calls: code paths warm

    query_student = student.students.sides["query"]
    latencies = _timed([lambda t=t: query_student.keywords(t) for t in texts.values()], repeats,
                       "bench expand: student", progress)

    items = list((load_dataset(catalog) if catalog is not None else dataset).items.values())
    started = time.perf_counter()
    student.expand_items(items)
    items_s = time.perf_counter() - started

    # fidelity: the same shadow item index, teacher vs student query keywords
    titles = {i: item.title for i, item in dataset.items.items()}
    item_index = ItemIndex.build(read_keyword_file(run_dir.item_keywords_path(spec.round)), titles, spec.k_max)
    teacher_keywords = read_keyword_file(run_dir.query_keywords_path(spec.round))
    student_keywords = dict(zip(texts, student.expand_queries(list(texts.values()))))
    relevant = dataset.relevant()
    teacher_f1, scored = _macro_f1(QueryView.build({q: teacher_keywords.get(q, []) for q in texts}, texts,
                                                   item_index, relevant, spec.k_max))
    student_f1, _ = _macro_f1(QueryView.build(student_keywords, texts, item_index, relevant, spec.k_max))
    no_keywords_f1, _ = _macro_f1(QueryView.build({q: [] for q in texts}, texts, item_index, relevant, spec.k_max))
    sizes = {q: len(k) for q, k in student_keywords.items()}

    llm = _llm_cold(run_dir, spec.round, list(texts.values())[:llm_samples], progress) if llm_samples > 0 else None
    folder = students_folder(run_dir, spec.round)
    result = {
        "run": run_dir.name, "round": spec.round, "split": split, "queries": len(texts), "queries_scored": scored,
        "catalog_items": len(items), "k_max": spec.k_max,
        "model": {side: s.classifier.name for side, s in student.students.sides.items()},
        "student_p50_ms": percentile(latencies, 50), "student_p99_ms": percentile(latencies, 99),
        "student_samples": len(latencies),
        "student_items_per_s": round(len(items) / items_s, 1), "student_catalog_s": round(items_s, 3),
        "teacher_f1": round(teacher_f1, 4), "student_f1": round(student_f1, 4),
        "text_only_f1": round(no_keywords_f1, 4),
        "fidelity_f1": round(student_f1 / teacher_f1, 4) if teacher_f1 > 0 else None,
        "student_mean_keywords": round(sum(sizes.values()) / len(sizes), 2),
        "student_size_mb": round(_folder_mb(folder), 2), "student_load_s": round(load_s, 3),
        "student_rss_mb": round(rss_students, 1),
        "vocabulary": {side: s.describe()["vocabulary"] for side, s in student.students.sides.items()},
        "cut": {side: {"top_k": s.cut.top_k, "threshold": s.cut.threshold} for side, s in student.students.sides.items()},
        "threads": 1,
    }
    if llm is not None:
        result.update(llm)
        if result.get("llm_cold_p50_ms") and result["student_p50_ms"]:
            result["speedup_p50"] = round(result["llm_cold_p50_ms"] / result["student_p50_ms"], 1)
    return result


def _llm_cold(run_dir: RunDir, round_: int, texts: list[str], progress: bool) -> dict:
    """The LLM query generator's first expansion of each text, one at a time (no cache)."""
    if not run_dir.checkpoint_path(round_, "query").is_dir():
        return {"llm_cold_p50_ms": None, "llm_note": "the round has no query checkpoint"}

    started = time.perf_counter()
    llm = RunExpander(run_dir.root, round_, sides=("query",), batch_size=1)
    load_s = time.perf_counter() - started
    try:
        latencies = _timed([lambda t=t: llm.expand_queries([t]) for t in texts], 1, "bench expand: LLM", progress)
    finally:
        llm.close()
    return {"llm_cold_p50_ms": percentile(latencies, 50), "llm_cold_samples": len(latencies),
            "llm_load_s": round(load_s, 2)}
