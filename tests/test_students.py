"""Students (generators/students): `train distill` from a round's keyword files, the
normal form of what they write, a bit-identical save/load round trip, and expansion of
items and queries the teacher never saw. Real omikuji models on the sample catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import Item
from cogr_search.generators.students.distill import open_students, students_folder
from cogr_search.generators.students.store import load_students, save_students
from cogr_search.keywords import normalize, representation
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.serve.expander import StudentExpander, open_expander
from tests.student_support import VECTORS, make_keyword_run

NEW_ITEMS = [
    Item("new-1", "Walnut Dining Table", "A solid walnut dining table for six."),
    Item("new-2", "Linen Throw Pillow Cover", ""),
    Item("new-3", "Stainless Steel Kitchen Faucet", "Pull-down sprayer."),
]


def _distilled(runs: Path, *options: str):  # noqa: ANN202 - RunDir
    run = make_keyword_run(runs)
    result = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1", "--json", *options])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["round"] == 0 and set(payload["sides"]) == {"query", "item"}
    return run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    """The default model choice (`auto`: knn at this size)."""
    return _distilled(tmp_path_factory.mktemp("student-runs"))


@pytest.fixture(scope="module")
def omikuji_run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    return _distilled(tmp_path_factory.mktemp("student-omikuji"), "--model", "omikuji")


def test_distill_records_the_students_in_the_round(run) -> None:  # noqa: ANN001
    manifest = json.loads((students_folder(run, 0) / "manifest.json").read_text())
    assert manifest["model"] == "auto" and manifest["version"] == "v1" and manifest["normalization"] == "1"
    assert {manifest["sides"][side]["model"] for side in ("query", "item")} == {"knn"}  # a few hundred texts
    split = json.loads(run.split_path.read_text())
    # the query student saw the training queries only, never the held-out ones
    assert manifest["sides"]["query"]["given"] == len(split["train_queries"])
    assert manifest["sides"]["item"]["given"] == len(read_keyword_file(run.item_keywords_path(0)))
    for side in ("query", "item"):
        entry = manifest["sides"][side]
        assert 1 <= entry["top_k"] <= 30 and entry["vocabulary"] > 50
    assert run.step_info("round-0/students")["version"] == "v1"


def test_student_sets_are_the_runs_normal_form(run) -> None:  # noqa: ANN001
    students = open_students(run, 0)
    cases = [json.loads(line) for line in VECTORS.read_text(encoding="utf-8").splitlines() if line.strip()]
    vocabulary = set(students.sides["item"].labels)
    assert all(k == normalize(k) and k for k in vocabulary)
    # the teacher file held the vectors' raw inputs: the vocabulary holds what the Java
    # normalizer's vectors expect, never the raw form
    changed = [c for c in cases if c["expected"] and c["expected"] != c["input"]]
    assert any(c["expected"] in vocabulary for c in changed)
    assert not any(c["input"] in vocabulary for c in changed)

    expander = StudentExpander(run.root, 0)
    texts = [c["input"] for c in cases if c["expected"]] + ["Oak Dining TABLE", "bathroom  storage"]
    for text, keywords in zip(texts, expander.expand_queries(texts)):
        assert all(k == normalize(k) and k for k in keywords), (text, keywords)
        assert normalize(text) not in keywords and len(keywords) == len(set(keywords)) <= 30
        assert normalize(text) in representation(keywords, text)  # the consumer adds the text's own form


@pytest.mark.parametrize("fixture", ["run", "omikuji_run"])
def test_students_round_trip_save_and_load_bit_identically(fixture: str, request: pytest.FixtureRequest,
                                                           tmp_path: Path) -> None:
    run = request.getfixturevalue(fixture)
    folder = students_folder(run, 0)
    loaded = load_students(folder)
    copy = tmp_path / "v1"
    save_students(copy, loaded.sides, loaded.manifest)
    original = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert original == sorted(p.relative_to(copy) for p in copy.rglob("*") if p.is_file())
    assert any(str(p).startswith("item/model") for p in original)
    for relative in original:
        assert (folder / relative).read_bytes() == (copy / relative).read_bytes(), relative
    again = load_students(copy)
    texts = ["oak dining table", "linen pillow", "stainless kitchen sink"]
    for text in texts:  # the same keywords, scores equal up to the order trees are summed in
        before, after = loaded.sides["query"].scored(text), again.sides["query"].scored(text)
        assert [k for k, _ in after] == [k for k, _ in before]
        assert [s for _, s in after] == pytest.approx([s for _, s in before], rel=1e-5)


def test_items_the_teacher_never_saw_get_keywords(run) -> None:  # noqa: ANN001
    labelled = set(read_keyword_file(run.item_keywords_path(0)))
    expander = open_expander(run.root, 0, sides=("item",))
    assert expander.kind == "student" and expander.model.startswith(f"{run.name}+r0+student-")
    keywords = expander.expand_items(NEW_ITEMS)
    assert all(keywords), keywords
    assert all(k == normalize(k) for ks in keywords for k in ks)
    # the teacher's rule (title word pairs) is what the student learnt: a new dining table
    # gets a dining-table keyword from the vocabulary
    assert any("table" in k for k in keywords[0]), keywords[0]
    assert not any(i.id in labelled for i in NEW_ITEMS)


def test_auto_takes_the_llm_when_the_round_has_no_students(tmp_path: Path) -> None:
    bare = make_keyword_run(tmp_path, "bare")
    with pytest.raises(Exception, match="no students"):
        open_expander(bare.root, 0, expander="student")
    result = CliRunner().invoke(cli, ["expand", "oak table", "--run", str(bare.root), "--expander", "student"])
    assert result.exit_code == 1 and "train distill" in result.output and result.output.count("\n") == 1
    # auto goes to the LLM generators, which this run does not have either
    with pytest.raises(Exception, match="no query checkpoint"):
        open_expander(bare.root, 0, expander="auto", sides=("query",))


def test_expand_file_writes_a_keyword_file_and_names_a_bad_line(run, tmp_path: Path) -> None:  # noqa: ANN001
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "a", "text": "oak dining table"}\n{"_id": "b", "text": "Linen Pillow"}\n')
    out = tmp_path / "keywords.jsonl"
    result = CliRunner().invoke(cli, ["expand", "--file", str(queries), "--out", str(out), "--run", str(run.root),
                                      "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["queries"] == 2 and summary["expander"] == "student"
    expander = StudentExpander(run.root, 0, sides=("query",))
    assert read_keyword_file(out) == dict(zip("ab", expander.expand_queries(["oak dining table", "Linen Pillow"])))

    queries.write_text('{"_id": "a", "text": "oak dining table"}\n{"_id": "b"}\n')
    bad = CliRunner().invoke(cli, ["expand", "--file", str(queries), "--out", str(out), "--run", str(run.root)])
    assert bad.exit_code == 1 and f"{queries}:2" in bad.output and bad.output.count("\n") == 1


def test_copies_are_the_texts_own_ngrams_that_are_run_keywords(run) -> None:  # noqa: ANN001
    from cogr_search.generators.students.model import Cut, SideStudent

    query = open_students(run, 0).sides["query"]
    student = SideStudent("query", query.featurizer, query.labels, query.classifier, Cut(1, 1.1, 2), 30,
                          ["frying pan", "nonstick frying pan", "pan", "10 in nonstick frying pan"])
    # longest first; the text's own form and n-grams below 2 words are not copied
    assert student.copies("10 in Nonstick Frying Pan") == ["nonstick frying pan", "frying pan"]
    assert student.keywords("10 in Nonstick Frying Pan") == ["nonstick frying pan", "frying pan"]  # threshold 1.1: no model keyword
    assert student.copies("cast iron skillet") == []


def test_bench_expand_reports_speed_and_fidelity(run) -> None:  # noqa: ANN001
    result = CliRunner().invoke(cli, ["bench", "expand", "--run", str(run.root), "--llm-samples", "1", "--repeats", "1",
                                      "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    split = json.loads(run.split_path.read_text())
    assert figures["queries"] == len(split["val_queries"]) and figures["catalog_items"] == 359
    assert figures["teacher_f1"] > 0 and figures["fidelity_f1"] == pytest.approx(
        figures["student_f1"] / figures["teacher_f1"], abs=1e-3)
    assert figures["llm_cold_p50_ms"] is None and "no query checkpoint" in figures["llm_note"]  # no LLM in this run
    assert figures["student_p50_ms"] > 0 and figures["student_items_per_s"] > 0 and figures["student_size_mb"] > 0
