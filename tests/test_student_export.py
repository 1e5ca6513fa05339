"""The students' export format (generators/students/export.py), Python's side of the
shared fixtures in tests/vectors/students/ (the plugin's StudentVectorsTest is the Java
side): `train distill` writes the export beside each student; read back, it gives the
Python student's keywords and scores exactly; the committed fixtures are what Python
computes from them; a file of another format or version is refused in one line."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.generators.students.distill import students_folder
from cogr_search.generators.students.export import EXPORT_NAME, exp_v1, read_export
from cogr_search.generators.students.model import SideStudent, item_text
from cogr_search.generators.students.store import load_students
from cogr_search.keywords import representation
from tests.make_student_vectors import HERE, MODELS
from tests.student_support import make_keyword_run


def _gz_json(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module", params=MODELS)
def distilled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    run = make_keyword_run(tmp_path_factory.mktemp(f"export-{request.param}"))
    result = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1",
                                      "--model", request.param])
    assert result.exit_code == 0, result.output
    return request.param, students_folder(run, 0)


def test_distill_writes_an_export_that_predicts_exactly_as_the_student(distilled) -> None:  # noqa: ANN001
    model, folder = distilled
    students = load_students(folder).sides
    dataset = load_dataset(sample_catalog_path())
    texts = {"query": [q.text for q in dataset.queries.values()],
             "item": [item_text(i.title, i.description) for i in dataset.items.values()]}
    for side, student in students.items():
        data = read_export(folder / side / EXPORT_NAME)
        assert (data["side"], data["classifier"]["type"]) == (side, "knn" if model == "knn" else "forest")
        exported = SideStudent.from_export(data)
        for text in texts[side]:
            assert exported.scored(text) == student.scored(text), (side, text)  # scores equal as floats
            assert exported.keywords(text) == student.keywords(text), (side, text)
        assert sum(bool(student.keywords(t)) for t in texts[side]) > len(texts[side]) / 2


@pytest.mark.parametrize("model", MODELS)
def test_the_shared_fixtures_are_what_python_computes(model: str) -> None:
    query = SideStudent.from_export(json.loads(gzip.decompress((HERE / model / "query.json.gz").read_bytes())))
    item = SideStudent.from_export(json.loads(gzip.decompress((HERE / model / "item.json.gz").read_bytes())))
    rows = _gz_json(HERE / model / "expected.jsonl.gz")
    assert sum(r["side"] == "query" for r in rows) >= 160 and sum(r["side"] == "item" for r in rows) == 359
    for row in rows:
        if row["side"] == "query":
            keywords = query.keywords(row["text"])
            assert (keywords, representation(keywords, row["text"], query.k_max)) == \
                (row["keywords"], row["representation"]), row["text"]
        else:
            keywords = item.keywords(item_text(row["title"], row["description"]))
            assert (keywords, representation(keywords, row["title"], item.k_max)) == \
                (row["keywords"], row["representation"]), row["id"]


def test_another_format_or_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / EXPORT_NAME
    path.write_text(json.dumps({"format": "cogr-student", "version": 2}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"^.*cogr-student-v1.json: not a cogr-student v1 export \(format 'cogr-student'\)$"):
        read_export(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1: invalid JSON"):
        read_export(path)


def test_the_formats_exp_is_within_two_ulps_of_libm() -> None:
    for i in range(-70000, 1):
        x = i / 100
        assert abs(exp_v1(x) - math.exp(x)) <= 2 * math.ulp(math.exp(x)), x
    assert exp_v1(-800.0) == 0.0 and exp_v1(0.0) == 1.0
