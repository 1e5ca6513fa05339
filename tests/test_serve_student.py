"""The expansion service answering with a run's students: a real `cogr-search serve`
process on a loopback port, for a run whose round has students and no LLM checkpoint at
all, so nothing but the students can answer (and torch is never imported)."""

from __future__ import annotations

import pytest

from cogr_search.generators.students.distill import distill_run, open_students
from cogr_search.keywords import normalize
from tests.serve_support import ServiceProcess
from tests.student_support import make_keyword_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    run = make_keyword_run(tmp_path_factory.mktemp("serve-student"), "served")
    distill_run(run, 0, threads=1, echo=lambda line: None)
    return run


def test_the_service_answers_with_the_student_and_no_llm(run) -> None:  # noqa: ANN001
    students = open_students(run, 0)
    texts = ["oak dining table", "linen throw pillow"]
    with ServiceProcess(run) as service:
        health = service.health()
        assert health["expander"] == "student" and health["torch_loaded"] is False
        assert health["model"] == students.tag("item") and health["round"] == 0

        status, body = service.post("/v1/expand/query", {"texts": texts})
        assert status == 200, body
        assert body["expander"] == "student" and body["run"] == run.name
        # exactly what the student writes in this process, in the run's normal form
        assert body["keywords"] == [students.sides["query"].keywords(t) for t in texts]
        assert all(k == normalize(k) for ks in body["keywords"] for k in ks)

        status, body = service.post("/v1/expand/item", {"items": [{"id": 1, "title": "Walnut Dining Table"}]})
        assert status == 200 and body["expander"] == "student" and body["keywords"][0], body
        assert service.health()["torch_loaded"] is False


def test_asking_for_the_llm_of_a_run_without_one_fails_to_start(run) -> None:  # noqa: ANN001
    with pytest.raises(Exception, match="checkpoint"):
        with ServiceProcess(run, "--expander", "llm"):
            pass
