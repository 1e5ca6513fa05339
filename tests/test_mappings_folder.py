"""The top-level mappings/ folder is the one source of the engine-facing JSON: the package
reads it (through the cogr_search/mappings link), its placeholders are the ones the code
fills, and the title pipeline's parameters are the Python side's own constants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster.definitions import definition, definitions_dir, fill
from cogr_search.cluster.pipelines import PipelineConfig, StudentModels, ingest_pipeline_body, search_pipeline_body
from cogr_search.cluster.title_pipeline import PIPELINE, pipeline_body
from cogr_search.errors import CogrError
from cogr_search.keywords import MAX_TERM_BYTES, WHITESPACE

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_the_package_reads_the_top_level_folder() -> None:
    assert definitions_dir().resolve() == (REPO_ROOT / "mappings").resolve()
    for path in sorted((REPO_ROOT / "mappings").rglob("*.json")):
        assert "_comment" in json.loads(path.read_text()), f"{path}: say why it is as it is"


def test_the_title_pipeline_uses_the_python_constants() -> None:
    (processor,) = pipeline_body()["processors"]
    assert processor["script"]["params"] == {"ws": WHITESPACE, "max_bytes": MAX_TERM_BYTES, "id": doc_fields.ID,
                                             "title": doc_fields.TITLE, "keywords": doc_fields.KEYWORDS}
    assert (definitions_dir() / "pipelines" / f"{PIPELINE}.json").is_file()


def test_the_service_pipelines_are_filled_in_with_their_types() -> None:
    config = PipelineConfig("http://127.0.0.1:8080/", field="name", batch_size=16, search_timeout="2s", ingest_timeout="5s")
    ingest = ingest_pipeline_body(config)["processors"][0]["cogr_keywords"]
    assert ingest == {"service_url": "http://127.0.0.1:8080", "batch_size": 16, "tag": "cogr-keywords", "timeout": "5s"}
    search = search_pipeline_body(config)
    assert search["request_processors"][0]["cogr_expand"] == {
        "service_url": "http://127.0.0.1:8080", "field": "name", "tag": "cogr-expand", "timeout": "2s"}
    assert "${" not in json.dumps([ingest, search])
    assert "_comment" not in search


def test_a_placeholder_without_a_value_is_refused() -> None:
    with pytest.raises(CogrError, match=r"placeholder \$\{service_url\} has no value"):
        fill(definition("pipelines/cogr.json"), {"field": "title"})


def test_the_student_pipelines_carry_the_runs_k_max_as_a_number() -> None:
    """The processors cut keyword sets at `k_max`; without the run's they would use the
    plugin's default (30) and differ from `sync` for a run trained at another k_max."""
    models = StudentModels(run="r", round=2, query_model="r+r2+student-q", item_model="r+r2+student-i", k_max=12)
    config = PipelineConfig(None, batch_size=16, students=models)
    ingest = ingest_pipeline_body(config)["processors"][0]["cogr_keywords"]
    assert ingest == {"student": "r+r2+student-i", "run": "r", "round": 2, "batch_size": 16, "k_max": 12,
                      "tag": "cogr-keywords"}
    search = search_pipeline_body(config)["request_processors"][0]["cogr_expand"]
    assert search == {"student": "r+r2+student-q", "run": "r", "round": 2, "field": "title", "k_max": 12,
                      "tag": "cogr-expand"}
