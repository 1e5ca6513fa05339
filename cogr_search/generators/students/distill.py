"""`cogr-search train distill`: a round's students, fitted to its teacher keyword files.

- query student: the run's training queries (never its held-out ones) -> the round's
  query keywords (`round-<r>/query_keywords.jsonl`);
- item student: the items the teacher labelled (`round-<r>/item_keywords.jsonl`) ->
  their keywords; its featurizer learns the n-grams of the whole catalog, because the
  point is predicting every item, labelled or not.

The keyword vocabulary of each side is the set of keywords its teacher file holds for
those texts (normal form, cut to the run's k_max as served): a keyword no teacher set
contains has no example to learn it from.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

from cogr_search.data import load_dataset
from cogr_search.errors import CogrError, InputError
from cogr_search.generators.students import backends
from cogr_search.generators.students.fit import fit_side
from cogr_search.generators.students.model import item_text
from cogr_search.generators.students.store import REFINED_VERSION, VERSION, Students, load_students, read_manifest, save_students
from cogr_search.keywords import keyword_set, term
from cogr_search.progress import progress_bar
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.runs.run_dir import RunDir, now_iso, read_json
from cogr_search.metrics import f1
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.query_view import QueryView


def students_folder(run: RunDir, round_: int, refined: bool | None = None) -> Path:
    """The round's students folder: `v1-refined/` when it holds students and `refined` is
    None (consumers take refined students whenever `--refine` made them), else `v1/`."""
    base = run.round_dir(round_) / "students"
    if refined or (refined is None and (base / REFINED_VERSION / "manifest.json").is_file()):
        return base / REFINED_VERSION
    return base / VERSION


def has_students(run: RunDir, round_: int) -> bool:
    try:
        return read_manifest(students_folder(run, round_)) is not None
    except ValueError:
        return True  # damaged: let the loader name the problem rather than silently use the LLM


def open_students(run: RunDir, round_: int, sides: tuple[str, ...] = ("query", "item")) -> Students:
    """The round's students, or `CogrError` naming the folder."""
    folder = students_folder(run, round_)
    try:
        return load_students(folder, sides)
    except FileNotFoundError:
        raise CogrError(f"run {run.name!r}: round {round_} has no students ({folder}); "
                        f"run `cogr-search train distill --run {run.name} --round {round_}`") from None
    except ValueError as err:
        raise InputError(str(err)) from None


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def retrieval_objective(dataset, queries, item_keywords: dict[str, list[str]], k_max: int):  # noqa: ANN001, ANN201
    """Macro F1 of held-out *training* queries' keyword sets against the shadow index of
    the round's item keywords: the cut a query student keeps is the one that retrieves
    best where the teacher's keywords will be served, not the one that copies the most
    keywords. Queries without a relevant item are skipped, as in training's metrics."""

    titles = {item_id: item.title for item_id, item in dataset.items.items()}
    index = ItemIndex.build(item_keywords, titles, k_max)
    relevant = dataset.relevant() if dataset.relevance_threshold is not None else {}

    def objective(positions, sets) -> float:  # noqa: ANN001
        texts = {queries[p].id: queries[p].text for p in positions}
        view = QueryView.build(dict(zip(texts, sets)), texts, index, relevant, k_max)
        scored = [f1(int(t), int(r), int(n)) for t, r, n in zip(view.n_tp, view.n_ret, view.n_rel) if n > 0]
        return sum(scored) / len(scored) if scored else 0.0

    return objective if relevant else None


def distill_run(run: RunDir, round_: int | None = None, *, backend: str = backends.DEFAULT_BACKEND, seed: int = 0,
                threads: int = 0, echo: Callable[[str], None] = print, progress: bool = False) -> Students:
    """Fit and save the students of `round_` (default: the latest complete round)."""
    round_ = run.require_round(round_)
    config = run.config()
    dataset = load_dataset(Path(config.data), config.relevance_threshold)
    split = read_json(run.split_path)
    query_file, item_file = run.query_keywords_path(round_), run.item_keywords_path(round_)
    query_keywords, item_keywords = read_keyword_file(query_file), read_keyword_file(item_file)

    queries = [dataset.queries[q] for q in split.get("train_queries", []) if q in query_keywords]
    items = [dataset.items[i] for i in item_keywords if i in dataset.items]
    if not queries:
        raise CogrError(f"{query_file}: no training query of the run has keywords; nothing to distil")
    if not items:
        raise CogrError(f"{item_file}: no item of {config.data} has keywords; nothing to distil")

    # the run's keywords a text's own n-grams may be copied from: the teacher's keywords of
    # the training queries and of the items, the base model's keywords and the training
    # queries themselves (never anything of a held-out query)
    taught = [query_keywords[q.id] for q in queries] + list(item_keywords.values())
    copyable = {k for keywords in taught for k in keyword_set(keywords)}
    if run.base_item_keywords_path.is_file():
        copyable |= {k for keywords in read_keyword_file(run.base_item_keywords_path).values()
                     for k in keyword_set(keywords)}
    copyable |= {term(q.text) for q in queries}
    copyable.discard("")
    sides, reports = {}, {}
    bar = progress_bar(2, f"distill {run.name}", "side", progress)
    echo(f"[{run.name}] query student: {len(queries)} training queries")
    sides["query"], reports["query"] = fit_side(
        "query", [q.text for q in queries], [query_keywords[q.id] for q in queries], config.k_max,
        backend=backend, seed=seed, threads=threads,
        objective=retrieval_objective(dataset, queries, item_keywords, config.k_max), copy_vocabulary=sorted(copyable))
    bar.update(1)
    echo(f"[{run.name}] item student: {len(items)} labelled items, featurizer over {len(dataset.items)} catalog items")
    sides["item"], reports["item"] = fit_side(
        "item", [item_text(i.title, i.description) for i in items], [item_keywords[i.id] for i in items],
        config.k_max, backend=backend, seed=seed, threads=threads,
        featurizer_texts=[item_text(i.title, i.description) for i in dataset.items.values()],
        copy_vocabulary=sorted(copyable))
    bar.update(1)
    bar.close()
    manifest = {
        "run": run.name, "round": round_, "model": backend, "k_max": config.k_max, "seed": seed,
        "created_at": now_iso(),
        "teacher": {"query_keywords": _sha(query_file), "item_keywords": _sha(item_file)},
        "sides": {side: report.as_dict() for side, report in reports.items()},
    }
    students = save_students(students_folder(run, round_, refined=False), sides, manifest)
    # refined students were made from the v1 just replaced: stale, so consumers must not prefer them
    shutil.rmtree(students_folder(run, round_, refined=True), ignore_errors=True)
    run.mark_done(f"round-{round_}/students", version=VERSION, model=backend,
                  sides={side: report.as_dict() for side, report in reports.items()})
    for side, report in reports.items():
        echo(f"[{run.name}] {side} student: vocabulary {report.vocabulary}, top_k {report.cut.top_k}, "
             f"threshold {report.cut.threshold}, copy n-grams of {report.cut.copy_min_words or '-'}+ words, dev F1 {report.dev_f1 if report.dev_f1 is None else round(report.dev_f1, 3)}")
    return students


def keywords_for_catalog(run: RunDir, round_: int, labelled: dict[str, list[str]], data: Path | None = None,
                         batch: int = 1024, progress: bool = False) -> tuple[dict[str, list[str]], int, str]:
    """The teacher's item keywords, plus the item student's for every item of the
    catalog (`data`, default the run's own) the teacher did not label (`sync --items all`).

    Refined students (`--refine`) write every item, labelled ones too: their item
    student's targets replaced the teacher's, and the refined query student was fitted
    against the index of its predictions, so that is the index it must be served with.

    Returns the merged keywords, how many items the student wrote, and the student's tag
    (the provenance the synced documents carry: the version holds its keywords)."""
    students = open_students(run, round_, ("item",))
    student = students.sides["item"]
    dataset = load_dataset(Path(data) if data is not None else Path(run.config().data))
    refined = bool(students.manifest.get("refined"))
    merged = {} if refined else dict(labelled)
    todo = [item for item_id, item in dataset.items.items() if refined or item_id not in labelled]
    with progress_bar(len(todo), "item student", "item", progress) as bar:
        for start in range(0, len(todo), batch):
            for item in todo[start : start + batch]:
                merged[item.id] = student.keywords(item_text(item.title, item.description))
            bar.update(len(todo[start : start + batch]))
    return merged, len(todo), students.tag("item")
