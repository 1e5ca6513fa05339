"""Writes the shared student fixtures, tests/vectors/students/<model>/ (`knn`, `omikuji`):

- `query.json.gz`, `item.json.gz`: the run's students in the export format (export.py);
- `expected.jsonl.gz`: for every query and item of the sample catalog (and the normalizer's
  vector inputs as extra queries), the keywords the Python student gives and their
  representation (`keywords.representation`, with the query or the item's title).

The run is tests/student_support.py's keyword run (round 0 of the sample catalog). Python
(tests/test_student_export.py) and the plugin's Java tests (StudentVectorsTest) and the
integration tests read these files; rerun after changing the students or the format:

    python -m tests.make_student_vectors
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

HERE = Path(__file__).parent / "vectors" / "students"
MODELS = ("knn", "omikuji")


def write_gzip(path: Path, lines: list[str]) -> None:
    """Gzip with a fixed mtime and no file name: the same content gives the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        for line in lines:
            out.write(line.encode("utf-8"))
            out.write(b"\n")


def expected_rows(students, dataset, extra_queries: list[str]) -> list[dict]:  # noqa: ANN001
    from cogr_search.generators.students.model import item_text
    from cogr_search.keywords import representation

    query, item = students["query"], students["item"]
    rows = []
    for text in [q.text for q in dataset.queries.values()] + extra_queries:
        keywords = query.keywords(text)
        rows.append({"side": "query", "text": text, "keywords": keywords,
                     "representation": representation(keywords, text, query.k_max)})
    for it in dataset.items.values():
        keywords = item.keywords(item_text(it.title, it.description))
        rows.append({"side": "item", "id": it.id, "title": it.title, "description": it.description or "",
                     "keywords": keywords, "representation": representation(keywords, it.title, item.k_max)})
    return rows


def write_vectors(out: Path, data: Path, extra_queries: list[str]) -> int:
    """Both models' fixtures for a keyword run on `data`, into `out`/<model>/; the rows written."""
    from cogr_search.cli.main import cli
    from cogr_search.data import load_dataset
    from cogr_search.generators.students.distill import students_folder
    from cogr_search.generators.students.export import EXPORT_NAME
    from cogr_search.generators.students.store import load_students
    from tests.student_support import make_keyword_run

    dataset = load_dataset(data)
    rows: list[dict] = []
    for model in MODELS:
        with tempfile.TemporaryDirectory() as runs:
            run = make_keyword_run(Path(runs), f"vectors-{model}", data=data)
            result = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1",
                                              "--model", model])
            if result.exit_code != 0:
                raise RuntimeError(f"train distill --model {model}: {result.output}")
            folder = students_folder(run, 0)
            students = load_students(folder).sides
            for side in ("query", "item"):
                write_gzip(out / model / f"{side}.json.gz",
                           [(folder / side / EXPORT_NAME).read_text(encoding="utf-8").rstrip("\n")])
            rows = expected_rows(students, dataset, extra_queries)
            write_gzip(out / model / "expected.jsonl.gz", [json.dumps(r, ensure_ascii=False) for r in rows])
    return len(rows)


def main() -> None:
    from cogr_search.data import sample_catalog_path
    from tests.student_support import vector_inputs

    try:
        rows = write_vectors(HERE, sample_catalog_path(), vector_inputs())
    except RuntimeError as err:
        sys.exit(str(err))
    print(f"{HERE}: {rows} texts per model")


if __name__ == "__main__":
    main()
