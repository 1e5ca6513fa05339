"""Every command checks its inputs before it writes: a refused call leaves the run folder,
the cluster and its output paths exactly as they were, and the corrected command then runs.

One real OpenSearch node, the tiny model (what it writes does not matter here), one short
run trained by the CLI. The run's stages (SFT, students) are module fixtures, each made by
a refused call and then its correction, recorded for the tests that check them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cogr_search.cli.main import cli
from cogr_search.cluster.client import Cluster
from cogr_search.data import sample_catalog_path
from cogr_search.runs.run_dir import RunDir
from tests.conftest import drop_indices, drop_template

pytestmark = [pytest.mark.opensearch, pytest.mark.model]

SAMPLE = str(sample_catalog_path())
RUN = "vbw"
SFT = [
    "train", "sft", "--data", SAMPLE, "--run", RUN, "--max-items", "8", "--max-queries", "6", "--max-steps", "2",
    "--batch-size", "4", "--item-keywords", "6", "--top-n", "6", "--learning-rate", "5e-4", "--max-length", "128",
    "--gen-batch-size", "8", "--max-new-tokens", "24", "--quiet",
]


@dataclass
class World:
    """The node, the catalog alias, the runs folder, and how each stage's calls went."""

    cluster: Cluster
    url: str
    alias: str
    runs: Path
    calls: dict[str, tuple[Result, ...]]
    states: dict[str, tuple[object, object]]

    def invoke(self, *args: str) -> Result:
        env = {"COGR_CLUSTER_URL": self.url, "COGR_RUNS_DIR": str(self.runs), "COGR_TORCH_THREADS": "1"}
        return CliRunner().invoke(cli, list(args), env=env)


def tree(root: Path) -> str:
    """Names and contents of everything under `root` ("" when it does not exist)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")) if root.exists() else []:
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest() if root.exists() else ""


def cluster_state(cluster: Cluster) -> tuple:
    """Indices with their document counts (the engine's own dot-indices aside: plugins make
    them when they like), aliases, index templates and ingest pipelines."""
    cluster.call(cluster.client.indices.refresh, index="vbw-*,cogr-*")
    indices = cluster.call(cluster.client.cat.indices, format="json", h="index,docs.count")
    aliases = cluster.call(cluster.client.indices.get_alias)
    templates = cluster.call(cluster.client.indices.get_index_template)
    pipelines = cluster.call(cluster.client.ingest.get_pipeline)
    return (sorted((i["index"], i["docs.count"]) for i in indices if not i["index"].startswith(".")),
            sorted((name, sorted(body.get("aliases", {}))) for name, body in aliases.items() if not name.startswith(".")),
            sorted(t["name"] for t in templates["index_templates"]), sorted(pipelines))


def refused(result: Result, expected: str) -> None:
    """Exit 1 and one `Error:` line that says `expected`."""
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert expected in lines[0], lines[0]


def ran(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def world(opensearch_cluster: Cluster, opensearch_url: str, tiny_model: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The catalog ingested; `train sft` refused (an index that does not exist, a folder that
    is not a data set), then run; `train distill` refused (a round the run lacks), then run."""
    runs = tmp_path_factory.mktemp("vbw") / "runs"
    world = World(opensearch_cluster, opensearch_url, "vbw-catalog", runs, {}, {})
    ran(world.invoke("ingest", SAMPLE, "--index", world.alias))
    model = ["--model", str(tiny_model)]
    not_data = runs.parent / "not-data"
    not_data.mkdir()
    (not_data / "readme.txt").write_text("hello\n")
    before = (tree(runs), cluster_state(world.cluster))
    world.calls["sft"] = (
        world.invoke(*SFT, *model, "--query-context", "bm25:3", "--context-index", "nosuch"),
        world.invoke(*[a if a != SAMPLE else str(not_data) for a in SFT], *model),
    )
    world.states["sft"] = (before, (tree(runs), cluster_state(world.cluster)))
    world.calls["sft"] += (world.invoke(*SFT, *model),)
    before = tree(runs)
    world.calls["distill"] = (world.invoke("train", "distill", "--run", RUN, "--round", "7"),)
    world.states["distill"] = (before, tree(runs))
    world.calls["distill"] += (world.invoke("train", "distill", "--run", RUN, "--round", "0"),)
    try:
        yield world
    finally:
        drop_indices(world.cluster, "vbw-*")
        for name in ("vbw-catalog", "vbw-enriched", "vbw-piped"):
            drop_template(world.cluster, f"cogr-{name}")
        for name in ("vbw-ingest",):
            try:
                world.cluster.call(world.cluster.client.ingest.delete_pipeline, id=name)
            except Exception:  # noqa: BLE001 - only there when the pipelines test ran
                pass
        try:
            world.cluster.request("DELETE", "/_search/pipeline/vbw")
        except Exception:  # noqa: BLE001
            pass


def test_train_sft_refuses_a_missing_context_index_and_a_non_dataset_before_the_run_folder(world: World) -> None:
    missing_index, not_data, corrected = world.calls["sft"]
    refused(missing_index, "--context-index nosuch: no such index or alias")
    refused(not_data, "not-data: not a dataset")
    (runs_before, cluster_before), after = world.states["sft"]
    assert runs_before == "" and after == (runs_before, cluster_before)  # not even runs/ was made
    ran(corrected)
    assert RunDir.open(RUN, world.runs).is_done("round-0")


def test_train_distill_refuses_a_round_the_run_lacks_without_touching_it(world: World) -> None:
    (missing_round, corrected), (before, after) = world.calls["distill"], world.states["distill"]
    refused(missing_round, "round 7")
    assert after == before
    ran(corrected)
    assert (RunDir.open(RUN, world.runs).round_dir(0) / "students" / "v1" / "manifest.json").is_file()


def test_train_rl_refuses_a_missing_sync_alias_before_training(world: World) -> None:
    rl = ["train", "rl", "--run", RUN, "--rounds", "1", "--query-steps", "1", "--item-steps", "1",
          "--num-generations", "2", "--prompts-per-step", "2", "--max-completion-length", "16",
          "--max-queries", "2", "--max-items", "4", "--gen-batch-size", "8", "--max-new-tokens", "16", "--quiet"]
    before = (tree(world.runs), cluster_state(world.cluster))
    refused(world.invoke(*rl, "--sync-index", "nosuch"), "--sync-index nosuch: alias 'nosuch' does not exist")
    assert (tree(world.runs), cluster_state(world.cluster)) == before
    ran(world.invoke(*rl))
    assert RunDir.open(RUN, world.runs).is_done("round-1")


def test_sync_refuses_partial_coverage_before_the_lease_and_the_new_version(world: World) -> None:
    before = (tree(world.runs), cluster_state(world.cluster))
    result = world.invoke("sync", "--index", world.alias, "--run", RUN, "--round", "0")
    refused(result, "keywords cover")
    assert "--missing keep" in result.stderr and "or --items all (the run's item student" in result.stderr
    assert (tree(world.runs), cluster_state(world.cluster)) == before
    done = json.loads(ran(world.invoke("sync", "--index", world.alias, "--run", RUN, "--round", "0",
                                       "--items", "all", "--json")).stdout)
    assert done["documents"] == done["with_keywords"] == 359


def test_ingest_enrich_refuses_a_missing_run_before_creating_the_index(world: World) -> None:
    before = cluster_state(world.cluster)
    refused(world.invoke("ingest", SAMPLE, "--index", "vbw-enriched", "--enrich", "--run", "nosuch"),
            "run 'nosuch' not found")
    assert cluster_state(world.cluster) == before
    ran(world.invoke("ingest", SAMPLE, "--index", "vbw-enriched", "--enrich", "--run", RUN, "--round", "0",
                     "--expander", "student"))
    assert world.cluster.call(world.cluster.client.count, index="vbw-enriched")["count"] == 359


def test_index_create_refuses_bad_pipeline_flags_before_the_template_and_index(world: World) -> None:
    before = cluster_state(world.cluster)
    args = ["index", "create", "--index", "vbw-piped", "--pipelines", "--ingest-pipeline", "vbw-ingest",
            "--search-pipeline", "vbw"]
    refused(world.invoke(*args, "--service-url", "127.0.0.1:8080"), "--service-url '127.0.0.1:8080' is not an http")
    refused(world.invoke(*args, "--service-url", "http://127.0.0.1:8080", "--search-timeout", "soon"),
            "--search-timeout 'soon' is not a time value")
    assert cluster_state(world.cluster) == before
    ran(world.invoke(*args, "--service-url", "http://127.0.0.1:8080", "--search-timeout", "500ms"))
    assert "vbw-ingest" in world.cluster.call(world.cluster.client.ingest.get_pipeline)


def test_eval_refuses_before_creating_its_out_folder_and_reports_the_overlap(world: World, tmp_path: Path) -> None:
    out = tmp_path / "results" / "bm25.json"
    eval_bm25 = ["eval", "--data", SAMPLE, "--method", "bm25", "--split", "all", "--cutoff", "10", "--out", str(out)]
    refused(world.invoke(*eval_bm25, "--index", "nosuch"), "index 'nosuch' does not exist")
    assert not (tmp_path / "results").exists()
    ran(world.invoke(*eval_bm25, "--index", world.alias))
    assert json.loads(out.read_text())["judged_items_in_index"]["share"] == 1.0
    # part of DATA's judged items elsewhere: a warning with the share, and the overlap in the JSON
    partial = tmp_path / "partial"
    partial.mkdir()
    some = json.loads((sample_catalog_path() / "corpus.jsonl").read_text().splitlines()[0])["_id"]
    (partial / "corpus.jsonl").write_text(f'{{"_id": "{some}", "title": "x"}}\n{{"_id": "zz-1", "title": "y"}}\n')
    (partial / "queries.jsonl").write_text('{"_id": "q1", "text": "oak"}\n{"_id": "q2", "text": "lamp"}\n')
    (partial / "qrels.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\t{some}\t1\nq2\tzz-1\t1\n")
    result = ran(world.invoke("eval", "--data", str(partial), "--index", world.alias, "--method", "bm25",
                              "--split", "all", "--cutoff", "10", "--relevance-threshold", "1", "--json"))
    assert f"index '{world.alias}' holds 1 of the 2 items judged relevant (50.0%)" in result.stderr
    assert json.loads(result.stdout)["judged_items_in_index"] == {"present": 1, "judged": 2, "share": 0.5}


def test_expand_file_refuses_a_bad_query_file_before_writing(world: World, tmp_path: Path) -> None:
    bad, good = tmp_path / "bad.jsonl", tmp_path / "queries.jsonl"
    bad.write_text('{"_id": "q1", "text": "oak"}\n{"_id": "q2"}\n')
    good.write_text('{"_id": "q1", "text": "oak table"}\n{"_id": "q2", "text": "brass lamp"}\n')
    out = tmp_path / "out" / "keywords.jsonl"
    expand = ["expand", "--run", RUN, "--round", "0", "--expander", "student", "--out", str(out)]
    refused(world.invoke(*expand, "--file", str(bad)), "bad.jsonl:2")
    assert not (tmp_path / "out").exists()
    ran(world.invoke(*expand, "--file", str(good)))
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["q1", "q2"]


def test_data_subset_refuses_before_writing_and_never_over_its_source(world: World, tmp_path: Path) -> None:
    out = tmp_path / "subset"
    refused(world.invoke("data", "subset", SAMPLE, "--queries", "100000", "--out", str(out)), "--queries 100000")
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv", "cogr-dataset.json"):
        if (sample_catalog_path() / name).is_file():
            (copy / name).write_bytes((sample_catalog_path() / name).read_bytes())
    before = tree(copy)
    refused(world.invoke("data", "subset", str(copy), "--queries", "3", "--out", str(copy)), "is SOURCE")
    assert tree(copy) == before and not out.exists()
    ran(world.invoke("data", "subset", SAMPLE, "--queries", "3", "--out", str(out)))
    assert len((out / "queries.jsonl").read_text().splitlines()) == 3


def test_report_refuses_an_unwritable_plot_before_writing_the_markdown(world: World, tmp_path: Path) -> None:
    result_file = tmp_path / "bm25.json"
    ran(world.invoke("eval", "--data", SAMPLE, "--index", world.alias, "--method", "bm25", "--split", "all",
                     "--cutoff", "10", "--out", str(result_file)))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    markdown = tmp_path / "report" / "eval.md"
    refused(world.invoke("report", str(result_file), "--markdown", str(markdown), "--plot", str(blocker / "p.png")),
            "a-file is a file, not a folder")
    assert not (tmp_path / "report").exists()
    ran(world.invoke("report", str(result_file), "--markdown", str(markdown), "--plot", str(markdown.with_suffix(".png"))))
    assert markdown.is_file() and markdown.with_suffix(".png").is_file()
    assert os.path.getsize(markdown) > 0
