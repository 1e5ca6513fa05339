"""`train distill --refine`: students whose targets were improved against the shadow index.

A plain student copies its teacher, weaknesses included. Refinement replaces the teacher
sets by better ones, in co-evolving rounds like Phase 2 (query side against frozen items,
then item side against the frozen query view), and refits after each side:

- query side: a training query's target is the subset of its candidates (the query
  student's top scored keywords and copies, the teacher's set, and the keywords of its
  relevant items in the frozen index: labels of *training* queries only) chosen by greedy
  forward selection of its F1 against the frozen item index (`QueryView.query_rewards`,
  the Phase 2 query reward); the teacher's set is kept instead when greedy does not beat it;
- item side: a labelled item's target keeps the keywords of its candidates (its current
  target and the item student's top keywords) whose counterfactual marginal reward
  against the frozen query view, R_i(S) - R_i(S minus k), both from
  `QueryView.item_rewards` (the Phase 2 item reward, Eq. 2.3), is not negative (default)
  or is positive (`item_keep="positive"`, the issue's rule; why the default differs:
  `positive_item_target`).

The frozen item index is what a refined run serves: the item student's predictions for
every catalog item. The frozen query view holds the refitted query student's keywords of
the training queries. Held-out (validation) queries are never used for targets or cuts;
they are only scored afterwards (`heldout_figures`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from cogr_search.data import load_dataset
from cogr_search.errors import CogrError
from cogr_search.generators.students import backends
from cogr_search.generators.students.fit import fit_side
from cogr_search.generators.students.model import SideStudent, item_text
from cogr_search.generators.students.store import REFINED_VERSION, Students, save_students
from cogr_search.keywords import keyword_set
from cogr_search.metrics import f1
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.runs.run_dir import RunDir, now_iso, read_json
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.query_view import QueryView
from cogr_search.generators.students.distill import _sha, distill_run, retrieval_objective, students_folder
from cogr_search.generators.students.store import load_students, read_manifest

DEFAULT_REFINE_ROUNDS = 2
"""Chosen on training queries only: on the sample catalog their F1 after refitting is
0.697 after one round and 0.823 after two; each round costs seconds there."""
ITEM_KEEP = ("nonnegative", "positive")
"""Item-side rule: drop negative-marginal keywords (default), or keep only positive ones
(the issue's literal rule; see `positive_item_target`)."""
CANDIDATES = 30
"""Scored keywords of the student taken as a text's candidates (the run's k_max, at most)."""


def greedy_query_target(view: QueryView, query_id: str, candidates: Sequence[str], k_max: int,
                        teacher: Sequence[str] = ()) -> tuple[list[str], float]:
    """Greedy forward selection: start from no keyword (the query's text alone), add the
    candidate that raises the query's F1 against the view's frozen item index the most,
    stop when none raises it or at k_max. Greedy is not optimal (F1 is not submodular),
    so the teacher's own set wins when it scores higher: a target never scores below it.
    Returns the target and its F1."""
    pool = list(dict.fromkeys(k for k in keyword_set(candidates) if k))
    chosen: list[str] = []
    best = float(view.query_rewards(query_id, [chosen])[0])
    while pool and len(chosen) < k_max:
        scores = view.query_rewards(query_id, [[*chosen, k] for k in pool])
        top = int(scores.argmax())
        if scores[top] <= best + 1e-12:
            break
        best = float(scores[top])
        chosen.append(pool.pop(top))
    teacher_set = keyword_set(teacher)[:k_max]
    if teacher_set:
        teacher_f1 = float(view.query_rewards(query_id, [teacher_set])[0])
        if teacher_f1 > best + 1e-12:
            return teacher_set, teacher_f1
    return chosen, best


def positive_item_target(view: QueryView, item_id: str, candidates: Sequence[str], k_max: int,
                         keep: str = "positive") -> list[str]:
    """The candidates whose counterfactual marginal reward is positive: R_i(S) - R_i(S
    minus k) > 0 against the frozen query view, S the candidates cut to k_max. A keyword
    that only pulls the item into queries it is irrelevant to has a negative marginal and
    goes. `keep="nonnegative"` also keeps zero marginals: a keyword that retrieves the
    item for no *training* query says nothing about unseen queries, and dropping it fits
    the item to the few training queries (on the sample catalog, 184 of 9,988 candidate
    keywords are positive, and training-query F1 after one round is 0.455 against 0.697)."""
    if keep not in ITEM_KEEP:
        raise CogrError(f"--item-keep {keep!r}: expected one of {', '.join(ITEM_KEEP)}")
    full = keyword_set(candidates)[:k_max]
    if not full:
        return []
    without = [[k for k in full if k != dropped] for dropped in full]
    rewards = view.item_rewards(item_id, [full, *without])
    floor = 1e-12 if keep == "positive" else -1e-12
    return [k for k, r in zip(full, rewards[1:]) if rewards[0] - r > floor]


def macro_f1(view: QueryView) -> float:
    """Macro F1 over the view's queries with a relevant item (as training reports it)."""
    scored = [f1(int(t), int(r), int(n)) for t, r, n in zip(view.n_tp, view.n_ret, view.n_rel) if n > 0]
    return sum(scored) / len(scored) if scored else 0.0


def item_predictions(student: SideStudent, dataset) -> dict[str, list[str]]:  # noqa: ANN001
    """The item student's keywords for every catalog item: the index a run serving it has."""
    return {i: student.keywords(item_text(item.title, item.description)) for i, item in dataset.items.items()}


def query_candidates(student: SideStudent, text: str, k_max: int) -> list[str]:
    """A query's candidates from the student: its copies and its top scored keywords."""
    return [*student.copies(text, 1), *(k for k, _ in student.scored(text, min(CANDIDATES, k_max)))]


def refine_students(run: RunDir, round_: int, plain: Students, rounds: int = DEFAULT_REFINE_ROUNDS, *,
                    item_keep: str = ITEM_KEEP[0], backend: str = backends.DEFAULT_BACKEND, seed: int = 0, threads: int = 0,
                    echo: Callable[[str], None] = print) -> Students:
    """Refine `plain` (the round's students) for `rounds` co-evolving rounds and save them
    beside it, in `round-<r>/students/v1-refined/`, which consumers then prefer."""
    config = run.config()
    k_max = config.k_max
    dataset = load_dataset(Path(config.data), config.relevance_threshold)
    split = read_json(run.split_path)
    teacher_q = read_keyword_file(run.query_keywords_path(round_))
    teacher_i = read_keyword_file(run.item_keywords_path(round_))
    train = [dataset.queries[q] for q in split.get("train_queries", []) if q in teacher_q and q in dataset.queries]
    texts = {q.id: q.text for q in train}
    relevant_all = dataset.relevant() if dataset.relevance_threshold is not None else {}
    relevant = {q: rel for q, rel in relevant_all.items() if q in texts}  # training labels only
    if not relevant:
        raise CogrError(f"{config.data}: no training query of run {run.name!r} has a relevant item; nothing to refine by")
    labelled = [dataset.items[i] for i in teacher_i if i in dataset.items]
    titles = {i: item.title for i, item in dataset.items.items()}
    copy_vocabulary = plain.sides["query"].copy_vocabulary

    query, item = plain.sides["query"], plain.sides["item"]
    item_targets = {i.id: keyword_set(teacher_i[i.id])[:k_max] for i in labelled}
    before = macro_f1(QueryView.build(_predict(query, texts), texts, ItemIndex.build(item_predictions(item, dataset),
                                      titles, k_max), relevant, k_max))
    history, reports = [], {}
    for n in range(1, rounds + 1):
        # query side, against the frozen item index the current item student serves
        served_items = item_predictions(item, dataset)
        index = ItemIndex.build(served_items, titles, k_max)
        view = QueryView.build({q: teacher_q[q] for q in texts}, texts, index, relevant, k_max)
        query_targets, gains = {}, []
        for q in train:
            own = [k for i in sorted(relevant.get(q.id, ())) if i in index.positions for k in index.keywords_of(i)]
            candidates = [*query_candidates(query, q.text, k_max), *keyword_set(teacher_q[q.id]), *own]
            target, score = greedy_query_target(view, q.id, candidates, k_max, teacher_q[q.id])
            query_targets[q.id] = target
            gains.append(score)
        teacher_target_f1 = macro_f1(view)
        echo(f"[{run.name}] refine round {n}: query targets F1 {sum(gains) / len(gains):.4f} "
             f"(teacher sets {teacher_target_f1:.4f}) on {len(train)} training queries")
        query, reports["query"] = fit_side(
            "query", [q.text for q in train], [query_targets[q.id] for q in train], k_max, backend=backend, seed=seed,
            threads=threads, objective=retrieval_objective(dataset, train, served_items, k_max),
            copy_vocabulary=copy_vocabulary)
        # item side, against the frozen query view of the refitted query student
        view = QueryView.build(_predict(query, texts), texts, index, relevant, k_max)
        kept = before_items = 0
        for it in labelled:
            candidates = [*item_targets[it.id], *(k for k, _ in item.scored(item_text(it.title, it.description),
                                                                             min(CANDIDATES, k_max)))]
            before_items += len(keyword_set(candidates)[:k_max])
            item_targets[it.id] = positive_item_target(view, it.id, candidates, k_max, item_keep)
            kept += len(item_targets[it.id])
        echo(f"[{run.name}] refine round {n}: item targets keep {kept} of {before_items} candidate keywords")
        item, reports["item"] = fit_side(
            "item", [item_text(i.title, i.description) for i in labelled], [item_targets[i.id] for i in labelled],
            k_max, backend=backend, seed=seed, threads=threads,
            featurizer_texts=[item_text(i.title, i.description) for i in dataset.items.values()],
            copy_vocabulary=copy_vocabulary)
        history.append({"round": n, "query_target_f1": round(sum(gains) / len(gains), 4),
                        "teacher_set_f1": round(teacher_target_f1, 4), "item_keywords_kept": kept,
                        "item_keywords_candidates": before_items})
    after = macro_f1(QueryView.build(_predict(query, texts), texts,
                                     ItemIndex.build(item_predictions(item, dataset), titles, k_max), relevant, k_max))
    manifest = {
        "run": run.name, "round": round_, "model": plain.manifest.get("model", backend), "k_max": k_max, "seed": seed,
        "created_at": now_iso(), "version": REFINED_VERSION, "teacher": plain.manifest.get("teacher"),
        "refined": {"rounds": rounds, "item_keep": item_keep, "from_digest": plain.manifest.get("digest"), "history": history,
                    "train_queries": len(relevant),
                    "train_f1_before": round(before, 4), "train_f1_after": round(after, 4)},
        "sides": {side: report.as_dict() for side, report in reports.items()},
    }
    echo(f"[{run.name}] refined students: training-query F1 {before:.4f} -> {after:.4f} (students' own item index)")
    return save_students(run.round_dir(round_) / "students" / REFINED_VERSION, {"query": query, "item": item},
                         manifest)


def _predict(student: SideStudent, texts: Mapping[str, str]) -> dict[str, list[str]]:
    return {q: student.keywords(text) for q, text in texts.items()}


def heldout_figures(run: RunDir, round_: int, plain: Students, refined: Students) -> dict:
    """Held-out (val) macro F1 on the shadow index, each with the item index it serves:
    teacher (teacher query sets, teacher item keywords), plain student (its query keywords
    on the teacher's item index, as `bench expand`'s fidelity, and on its own item
    predictions), refined student (its query keywords on its own item predictions, and
    on the teacher's item index)."""
    config = run.config()
    k_max = config.k_max
    dataset = load_dataset(Path(config.data), config.relevance_threshold)
    split = read_json(run.split_path)
    texts = {q: dataset.queries[q].text for q in split.get("val_queries", []) if q in dataset.queries}
    relevant = dataset.relevant() if dataset.relevance_threshold is not None else {}
    titles = {i: item.title for i, item in dataset.items.items()}
    teacher_index = ItemIndex.build(read_keyword_file(run.item_keywords_path(round_)), titles, k_max)
    teacher_q = read_keyword_file(run.query_keywords_path(round_))

    def score(query_keywords: dict[str, list[str]], index: ItemIndex) -> float:
        return round(macro_f1(QueryView.build(query_keywords, texts, index, relevant, k_max)), 4)

    plain_q, refined_q = _predict(plain.sides["query"], texts), _predict(refined.sides["query"], texts)
    plain_index = ItemIndex.build(item_predictions(plain.sides["item"], dataset), titles, k_max)
    refined_index = ItemIndex.build(item_predictions(refined.sides["item"], dataset), titles, k_max)
    return {
        "split": "val", "queries": len(texts), "queries_scored": sum(1 for q in texts if relevant.get(q)),
        "teacher_f1": score({q: teacher_q.get(q, []) for q in texts}, teacher_index),
        "text_only_f1": score({}, teacher_index),
        "plain_f1_teacher_items": score(plain_q, teacher_index),
        "plain_f1_own_items": score(plain_q, plain_index),
        "refined_f1_own_items": score(refined_q, refined_index),
        "refined_f1_teacher_items": score(refined_q, teacher_index),
    }


def refine_run(run: RunDir, round_: int | None = None, rounds: int = DEFAULT_REFINE_ROUNDS, *,
               item_keep: str = ITEM_KEEP[0], backend: str = backends.DEFAULT_BACKEND, seed: int = 0, threads: int = 0,
               echo: Callable[[str], None] = print) -> tuple[Students, Students, dict]:
    """Plain students (reused when `v1/` was fitted to the round's current keyword files
    with the same model and seed, else distilled now), refined ones, and the held-out figures."""

    if rounds < 1:
        raise CogrError(f"--refine-rounds {rounds}: expected at least 1")
    round_ = run.require_round(round_)
    folder = students_folder(run, round_, refined=False)
    try:
        manifest = read_manifest(folder)
    except ValueError:
        manifest = None
    teacher = {"query_keywords": _sha(run.query_keywords_path(round_)),
               "item_keywords": _sha(run.item_keywords_path(round_))}
    if manifest and manifest.get("teacher") == teacher and manifest.get("model") == backend and manifest.get("seed") == seed:
        echo(f"[{run.name}] plain students: reusing {folder}")
        plain = load_students(folder)
    else:
        plain = distill_run(run, round_, backend=backend, seed=seed, threads=threads, echo=echo)
    refined = refine_students(run, round_, plain, rounds, item_keep=item_keep, backend=backend, seed=seed, threads=threads, echo=echo)
    run.mark_done(f"round-{round_}/students-refined", version=REFINED_VERSION, rounds=rounds,
                  train_f1=refined.manifest["refined"]["train_f1_after"])
    return plain, refined, heldout_figures(run, round_, plain, refined)
