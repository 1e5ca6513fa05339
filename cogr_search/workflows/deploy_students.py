"""`index create --pipelines --run RUN` without a service: the round's students, stored in
the cluster for the plugin (cluster/student_store.py), and the model ids the pipelines name.

The stored bytes are each side's export file as `train distill` wrote it (covered by the
side's digest, which the model id carries), so the cluster expands with exactly the
students the run's Python consumers (`sync`, `expand`, the Python API) use.
"""

from __future__ import annotations

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.pipelines import StudentModels
from cogr_search.cluster.student_store import STUDENT_INDEX, StoredStudent, store_student
from cogr_search.errors import CogrError
from cogr_search.generators.students.distill import open_students, students_folder
from cogr_search.generators.students.export import EXPORT_NAME, read_export
from cogr_search.runs.run_dir import RunDir


def deploy_students(cluster: Cluster, run: RunDir, round_: int | None = None,
                    index: str = STUDENT_INDEX) -> tuple[StudentModels, list[StoredStudent]]:
    """Store both sides' exports of the round (default: the latest) under their model ids;
    the models carry the round's serving k_max for the processors."""
    round_ = run.require_round(round_)
    students = open_students(run, round_)
    folder = students_folder(run, round_)
    stored = []
    for side in ("query", "item"):
        path = folder / side / EXPORT_NAME
        if not path.is_file():
            raise CogrError(f"{path}: missing: these students predate the export format; "
                            f"rerun `cogr-search train distill --run {run.name} --round {round_}`")
        try:
            read_export(path)
        except ValueError as err:
            raise CogrError(str(err)) from None
        stored.append(store_student(cluster, students.tag(side), run.name, round_, side, path.read_bytes(), index))
    models = StudentModels(run=run.name, round=round_, query_model=students.tag("query"), item_model=students.tag("item"),
                           k_max=run.serving_spec(round_).k_max)
    return models, stored
