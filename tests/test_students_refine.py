"""`train distill --refine` (generators/students/refine.py): targets improved against the
shadow index, by hand on tiny indexes, and end to end on the sample catalog. Shadow only:
no OpenSearch node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.generators.students.distill import keywords_for_catalog, students_folder
from cogr_search.generators.students.refine import greedy_query_target, positive_item_target
from cogr_search.generators.students.store import load_students, save_students
from cogr_search.serve.expander import StudentExpander, open_expander
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.query_view import QueryView
from tests.student_support import make_keyword_run

TITLES = {"A": "oak table", "B": "pine table", "C": "oak chair"}


def _table_view() -> QueryView:
    """Items A, B, C indexed by their titles plus `table`/`oak`/`pine`/`chair`; one query,
    "wooden table", relevant to A only, whose own text matches no item."""
    index = ItemIndex.build({"A": ["table", "oak"], "B": ["table", "pine"], "C": ["chair", "oak"]}, TITLES, 30)
    return QueryView.build({}, {"q": "wooden table"}, index, {"q": {"A"}}, 30)


def test_greedy_query_target_beats_the_teachers_set() -> None:
    view = _table_view()
    # teacher: {table} retrieves A and B: F1 = 2*1 / (2 + 1) = 0.667
    assert view.query_reward("q", ["table"]) == pytest.approx(2 / 3)
    # greedy from nothing (F1 0): table 0.667, oak (A, C) 0.667, oak table (A's title) 1.0
    # -> {oak table}; adding table or oak then brings B or C in (0.667): stop
    target, score = greedy_query_target(view, "q", ["table", "oak", "oak table"], 30, teacher=["table"])
    assert target == ["oak table"] and score == pytest.approx(1.0)
    # no candidate helps (chair retrieves C only, F1 0): the teacher's set is kept
    assert greedy_query_target(view, "q", ["chair"], 30, teacher=["table"]) == (["table"], pytest.approx(2 / 3))
    # k_max bounds the target
    assert len(greedy_query_target(view, "q", ["table", "oak", "oak table"], 1)[0]) == 1


def test_items_keep_only_positive_marginal_keywords() -> None:
    # reference: A = {walnut desk}, B = {pine shelf, shelf}; q1 "desk" rel {A} retrieves
    # nothing (F 0), q2 "shelf" rel {B} retrieves B (F 1), q3 "lamp" has no relevant item
    index = ItemIndex.build({"B": ["shelf"]}, {"A": "walnut desk", "B": "pine shelf"}, 30)
    view = QueryView.build({}, {"q1": "desk", "q2": "shelf", "q3": "lamp"}, index, {"q1": {"A"}, "q2": {"B"}}, 30)
    candidates = ["desk", "shelf", "lamp", "sofa"]
    # all four: q1 F 1 (A), q2 F 2/3 (A, B), q3 F 0 -> total 5/3. Marginals, R(S) - R(S - k):
    # desk +1 (q1 back to 0), shelf -1/3 (q2 back to 1), lamp 0 (q3 has no relevant item), sofa 0
    full = view.item_reward("A", candidates)
    assert full == pytest.approx(5 / 3 - 1.0)
    assert full - view.item_reward("A", ["shelf", "lamp", "sofa"]) == pytest.approx(1.0)
    assert full - view.item_reward("A", ["desk", "lamp", "sofa"]) == pytest.approx(-1 / 3)
    assert positive_item_target(view, "A", candidates, 30) == ["desk"]
    assert positive_item_target(view, "A", candidates, 30, keep="nonnegative") == ["desk", "lamp", "sofa"]
    with pytest.raises(Exception, match="--item-keep 'most'"):
        positive_item_target(view, "A", candidates, 30, keep="most")


def test_distill_refine_writes_a_refined_version_consumers_load(tmp_path: Path) -> None:
    run = make_keyword_run(tmp_path)
    result = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1", "--refine",
                                      "--refine-rounds", "1", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["version"] == "v1-refined" and payload["refined"]["rounds"] == 1
    split = json.loads(run.split_path.read_text())
    heldout = payload["heldout"]
    assert heldout["split"] == "val" and heldout["queries"] == len(split["val_queries"])
    for key in ("teacher_f1", "plain_f1_teacher_items", "plain_f1_own_items", "refined_f1_own_items"):
        assert 0.0 <= heldout[key] <= 1.0
    refined = payload["refined"]
    # training queries only, and the refined targets retrieve better than copying the teacher did
    assert refined["train_queries"] <= len(split["train_queries"])
    assert refined["train_f1_after"] > refined["train_f1_before"]
    assert refined["history"][0]["query_target_f1"] >= refined["history"][0]["teacher_set_f1"]

    folder = students_folder(run, 0)
    assert folder.name == "v1-refined" and (folder.parent / "v1" / "manifest.json").is_file()
    loaded = load_students(folder)
    assert loaded.manifest["refined"]["train_f1_after"] == refined["train_f1_after"]
    copy = tmp_path / "copy"
    save_students(copy, loaded.sides, loaded.manifest)
    files = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(copy) for p in copy.rglob("*") if p.is_file())
    assert all((folder / f).read_bytes() == (copy / f).read_bytes() for f in files)

    # consumers take the refined students the same way they take plain ones
    expander = open_expander(run.root, 0)
    assert isinstance(expander, StudentExpander)
    assert expander.model == f"{run.name}+r0+student-{loaded.manifest['digest']['item'][:12]}"
    assert expander.expand_queries(["oak dining table"]) == [loaded.sides["query"].keywords("oak dining table")[:30]]
    # sync --items all: the refined item student writes every item, labelled ones too
    merged, written, tag = keywords_for_catalog(run, 0, {"not-an-item": ["x"]})
    assert written == len(merged) == 359 and "not-an-item" not in merged and tag == expander.model

    # a plain distill replaces v1: the refined students made from the old one go
    again = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1", "--json"])
    assert again.exit_code == 0, again.output
    assert students_folder(run, 0).name == "v1" and not (folder / "manifest.json").exists()
