"""The students in the commands that write to and read from a real OpenSearch node:
`ingest --enrich --run --expander student`, `sync --run --items all` (the item student
writes every item the teacher did not label), `eval --method cogr --run --expander
student`, `eval --data OTHER --split all --run` (and its refusal when OTHER holds the
run's training queries), and `search --expander student`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.cluster.documents import KEYWORDS, MODEL
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.generators.students.distill import distill_run, open_students
from cogr_search.generators.students.model import item_text
from cogr_search.keywords import representation
from cogr_search.runs.keyword_files import read_keyword_file
from tests.student_support import make_keyword_run

pytestmark = pytest.mark.opensearch


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    run = make_keyword_run(tmp_path_factory.mktemp("student-cluster"), "clustered")
    distill_run(run, 0, threads=1, echo=lambda line: None)
    return run


def _cli(args: list[str], url: str):  # noqa: ANN202 - click Result
    return CliRunner().invoke(cli, [*args, "--opensearch-url", url])


def _source(cluster, alias: str, item_id: str) -> dict:  # noqa: ANN001
    return cluster.call(cluster.client.get, index=alias, id=item_id)["_source"]


def test_enrich_sync_eval_and_search_with_the_students(run, opensearch_url: str, opensearch_cluster, index_name: str,
                                                       tmp_path: Path) -> None:  # noqa: ANN001
    sample = str(sample_catalog_path())
    dataset = load_dataset(sample_catalog_path())
    students = open_students(run, 0)
    item_student = students.sides["item"]
    labelled = read_keyword_file(run.item_keywords_path(0))
    unlabelled = sorted(set(dataset.items) - set(labelled))
    some = dataset.items[unlabelled[0]]
    expected = representation(item_student.keywords(item_text(some.title, some.description)), some.title, 30)

    # ingest --enrich: every item gets the item student's keywords
    ingested = _cli(["ingest", sample, "--index", index_name, "--enrich", "--run", str(run.root),
                     "--expander", "student", "--json"], opensearch_url)
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.stdout)["enrich"]["generated"] == len(dataset.items)
    doc = _source(opensearch_cluster, index_name, some.id)
    assert doc[KEYWORDS] == expected and doc[MODEL] == students.tag("item")

    # sync --items all: teacher keywords where it labelled, the student's for the rest
    synced = _cli(["sync", "--index", index_name, "--run", str(run.root), "--items", "all", "--json"], opensearch_url)
    assert synced.exit_code == 0, synced.output
    payload = json.loads(synced.stdout)
    assert payload["student_items"] == len(unlabelled) and payload["with_keywords"] == len(dataset.items)
    assert _source(opensearch_cluster, index_name, some.id)[KEYWORDS] == expected
    taught = next(iter(labelled))
    taught_doc = _source(opensearch_cluster, index_name, taught)
    assert taught_doc[KEYWORDS] == representation(labelled[taught], dataset.items[taught].title, 30)

    # eval with the query student on the run's held-out queries
    split = json.loads(run.split_path.read_text())
    scored = _cli(["eval", "--data", sample, "--index", index_name, "--method", "cogr", "--run", str(run.root),
                   "--expander", "student", "--json"], opensearch_url)
    assert scored.exit_code == 0, scored.output
    result = json.loads(scored.stdout)
    assert result["settings"]["expander"] == "student" and result["queries"] <= len(split["val_queries"])
    assert 0.0 < result["F1"] <= 1.0

    # another labelled set: refused while it holds training queries, scored once it does not
    refused = _cli(["eval", "--data", sample, "--index", index_name, "--method", "cogr", "--run", str(run.root),
                    "--split", "all"], opensearch_url)
    assert refused.exit_code == 1 and "training queries of run" in refused.output
    assert refused.output.count("\n") == 1
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(sample_catalog_path() / "corpus.jsonl", other / "corpus.jsonl")
    held_out = set(split["val_queries"])
    with open(other / "queries.jsonl", "w") as out:
        for qid in held_out:
            out.write(json.dumps({"_id": f"other-{qid}", "text": dataset.queries[qid].text}) + "\n")
    lines = (sample_catalog_path() / "qrels.tsv").read_text().splitlines()
    with open(other / "qrels.tsv", "w") as out:
        out.write(lines[0] + "\n")
        for line in lines[1:]:
            qid, rest = line.split("\t", 1)
            if qid in held_out:
                out.write(f"other-{qid}\t{rest}\n")
    threshold = str(dataset.relevance_threshold)
    scored = _cli(["eval", "--data", str(other), "--index", index_name, "--method", "cogr", "--run", str(run.root),
                   "--split", "all", "--relevance-threshold", threshold, "--json"], opensearch_url)
    assert scored.exit_code == 0, scored.output
    other_result = json.loads(scored.stdout)
    assert other_result["settings"]["expander"] == "student"
    assert other_result["queries"] == result["queries"] and other_result["F1"] == pytest.approx(result["F1"])

    # search with the query student
    found = _cli(["search", "oak dining table", "--index", index_name, "--run", str(run.root),
                  "--expander", "student", "--json"], opensearch_url)
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert hits["expander"] == "student" and hits["hits"]


def test_sync_of_a_refined_round_writes_every_item_from_the_item_student(
        tmp_path: Path, opensearch_url: str, opensearch_cluster, index_name: str) -> None:  # noqa: ANN001
    """A refined query student was fitted against the refined item student's keywords: a
    plain `sync --run` serves those for every item, not the teacher's, and says so."""
    from cogr_search.generators.students.refine import refine_run

    run = make_keyword_run(tmp_path, "refined")
    _, refined, _ = refine_run(run, 0, rounds=1, threads=1, echo=lambda line: None)
    dataset = load_dataset(sample_catalog_path())
    assert _cli(["ingest", str(sample_catalog_path()), "--index", index_name], opensearch_url).exit_code == 0
    synced = _cli(["sync", "--index", index_name, "--run", str(run.root), "--json"], opensearch_url)
    assert synced.exit_code == 0, synced.output
    assert "refined students" in synced.stderr
    payload = json.loads(synced.stdout)
    assert payload["student_items"] == len(dataset.items) and payload["with_keywords"] == len(dataset.items)
    taught = next(iter(read_keyword_file(run.item_keywords_path(0))))
    item = dataset.items[taught]
    predicted = refined.sides["item"].keywords(item_text(item.title, item.description))
    assert _source(opensearch_cluster, index_name, taught)[KEYWORDS] == representation(predicted, item.title, 30)
    assert _source(opensearch_cluster, index_name, taught)[MODEL] == refined.tag("item")
