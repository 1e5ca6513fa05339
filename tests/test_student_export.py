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

import numpy as np
import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.generators.students.distill import students_folder
from cogr_search.generators.students.export import EXPORT_NAME, _exp_v1_array, exp_v1, read_export
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


def _reference_predict(forest_json: dict, row: list[tuple[int, float]], top_k: int) -> list[tuple[int, float]]:
    """The format's forest inference written out plainly (docs/students.md): per column a
    sequential dot product in ascending feature order, omikuji's beam search with ties by
    position, each leaf's labels by exp_v1, the per-label sums in tree, leaf and label order."""
    n_features, beam = forest_json["n_features"], max(10, top_k)
    values = dict(row) | {n_features: 1.0}

    def hinge(column: list) -> float:
        s = 0.0
        for f, w in column:
            if f in values:
                s += values[f] * w
        m = 1.0 - s
        return 0.0 if m < 0.0 else -(m * m)

    totals: dict[int, float] = {}
    for tree in forest_json["trees"]:
        level = [(0.0, tree)]
        while any("children" in node for _, node in level):
            nxt = []
            for score, node in level:
                if "children" not in node:
                    nxt.append((score, node))
                    continue
                nxt += [(hinge(column) + score, child) for column, child in zip(node["columns"], node["children"])]
            keep = sorted(sorted(range(len(nxt)), key=lambda i: (-nxt[i][0], i))[:beam])
            level = [nxt[i] for i in keep]
        for score, leaf in level:
            scored = [(exp_v1(hinge(column) + score), label) for column, label in zip(leaf["columns"], leaf["labels"])]
            for s, label in sorted(scored, key=lambda sl: (-sl[0], sl[1]))[:beam] if len(scored) > beam else scored:
                totals[label] = totals.get(label, 0.0) + s
    n = float(len(forest_json["trees"]))
    return sorted(((label, total / n) for label, total in totals.items()), key=lambda ls: (-ls[1], ls[0]))[:top_k]


@pytest.mark.parametrize("side", ["query", "item"])
def test_the_fast_forest_gives_the_plain_definitions_bits(side: str) -> None:
    """Forest.predict scores every column in numpy passes and takes exps in one; its labels
    and scores must be the plain sequential definition's to the bit (the Java reader's too)."""
    data = json.loads(gzip.decompress((HERE / "omikuji" / f"{side}.json.gz").read_bytes()))
    student = SideStudent.from_export(data)
    rows = [r for r in _gz_json(HERE / "omikuji" / "expected.jsonl.gz") if r["side"] == side][:25]
    predicted = 0
    for r in rows:
        vector = student.featurizer.vector(r["text"] if side == "query" else item_text(r["title"], r["description"]))
        for top_k in (1, 30):
            expected = _reference_predict(data["classifier"], vector, top_k)
            assert student.classifier.predict(vector, top_k) == expected, (r.get("text") or r["id"], top_k)
            predicted += bool(expected)
    assert predicted >= len(rows)


def test_the_formats_exp_over_an_array_is_the_scalars_bit_for_bit() -> None:
    xs = [i / 97 for i in range(-80000, 100)] + [-700.5, -1e9, 701.0, 0.0, -0.0]
    assert [v.hex() for v in _exp_v1_array(np.array(xs)).tolist()] == [exp_v1(x).hex() for x in xs]
