"""The demo's whole path on a real node with a tiny random model (the flow is checked, not what it learns):
ingest, Phase 1, sync of round 0, one RL round (both sides, synced), BM25 vs CoGR after
SFT and after RL on the held-out queries, the report and the example query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.demo import DemoOptions, run_demo
from cogr_search.evaluation.methods import evaluate_cogr_run, split_of_run
from cogr_search.cluster.indices import alias_target
from cogr_search.settings import load_settings

pytestmark = [pytest.mark.opensearch, pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(opensearch_cluster):  # noqa: ANN001, ANN201
    """OpenSearch only: the demo's end-to-end run (models) is checked once, on the default engine."""
    return opensearch_cluster


def test_demo_runs_end_to_end_and_resumes(opensearch_url, cluster, index_name, tmp_path: Path, monkeypatch, tiny_model,
                                          capfd):
    monkeypatch.setenv("COGR_TORCH_THREADS", "1")
    settings = load_settings(opensearch_url=opensearch_url)
    generation = {"generation.batch_size": 8, "generation.max_new_tokens": 40}
    options = DemoOptions(
        index=index_name, run="demo-test", runs_dir=tmp_path, sft_steps=3, rl_steps=2,
        query_context="bm25:3",  # the demo's whole path with search results in the query prompt
        # the demo's flow is checked, not what its model learns: a tiny random model
        phase1_changes={"model": str(tiny_model), "max_items": 8, "max_queries": 8, "sft.batch_size": 4, **generation},
        phase2_changes={**generation, **{f"{side}.{name}": value for side in ("query", "item") for name, value in
                                         {"num_generations": 2, "prompts_per_step": 2, "max_completion_length": 24}.items()}},
    )
    lines: list[str] = []

    result = run_demo(settings, options, echo=lines.append)

    # none of our bars (unit "row") into a pipe: stderr is not a terminal here (the libraries' own
    # bars are switched off by the CLI before they are imported, which this in-process call skips)
    assert "row/s" not in capfd.readouterr().err
    assert alias_target(cluster, index_name).startswith(f"{index_name}--r1-")  # round 1 is served
    assert [r["method"] for r in result.reports] == ["bm25", "cogr-sft", "cogr-rl1"]
    assert all(r["queries"] > 0 and 0.0 <= r["F1"] <= 1.0 for r in result.reports)
    assert len({r["queries"] for r in result.reports}) == 1  # the same held-out queries
    assert result.report_path.is_file() and "cogr-rl1" in result.report_path.read_text()
    # the example is a held-out query and what it retrieves (a tiny run may retrieve nothing for all of them)
    assert result.example["query"] and result.example["keywords"]
    assert result.example["retrieved"] >= len(result.example["hits"])
    assert [p["phase"] for p in result.phases] == ["sft", "rl-query-1", "rl-item-1"]
    # GRPO trained LoRA adapters (the demo's default) and saved them merged into plain models
    rl_config = json.loads((result.run / "rl_config.json").read_text())
    assert rl_config["query"]["lora"] and rl_config["item"]["lora"]
    for side in ("query", "item"):
        saved = result.run / "round-1" / side
        assert (saved / "model.safetensors").is_file() and not (saved / "adapter_config.json").exists()
        trained = json.loads((result.run / "manifest.json").read_text())["steps"][f"round-1/rl_{side}"]
        assert 0 < trained["trainable_parameters"] < 10_000_000  # the adapters, not the 135M weights
    stored = (result.run / "query_context.jsonl").read_text().splitlines()  # search results in the query prompt
    split = json.loads((result.run / "split.json").read_text())
    assert sorted(json.loads(line)["id"] for line in stored) == sorted(split["train_queries"] + split["val_queries"])
    # nearly every query has BM25 hits ("bookcase" has none: the catalog says "bookshelf")
    assert sum(1 for line in stored if json.loads(line)["titles"]) >= len(stored) - 2
    assert result.hybrid["method"] == "hybrid" and result.hybrid["queries"] == result.reports[0]["queries"]
    assert "cogr_keywords.text" in result.hybrid["settings"]["fields"]
    # the served round distilled: the student's row on the same queries, and one cold expansion by each expander
    student = result.student
    assert student["report"]["method"] == "student" and student["report"]["settings"]["expander"] == "student"
    assert student["report"]["queries"] == result.reports[0]["queries"] and student["query"] == result.example["query"]
    assert student["student"]["cold_ms"] > 0 and student["llm"]["cold_ms"] > 0
    assert (result.run / "round-1" / "students" / "v1" / "manifest.json").is_file()
    payload = result.as_json()
    assert payload["cogr"] == result.reports[-1] and payload["bm25"]["method"] == "bm25"
    json.dumps(payload)  # --json prints it as one object
    rounds = cluster.client.search(index=index_name, body={"size": 0, "aggs": {"r": {"terms": {"field": "cogr_round"}}}})
    assert {b["key"] for b in rounds["aggregations"]["r"]["buckets"]} <= {1}

    # A second run resumes: no training step runs again, and round 1 is served again.
    lines.clear()
    again = run_demo(settings, options, echo=lines.append)
    assert not any(line.endswith("...") for line in lines if line.startswith("[demo-test]"))
    assert alias_target(cluster, index_name).startswith(f"{index_name}--r1-")
    assert [r["F1"] for r in again.reports] == pytest.approx([r["F1"] for r in result.reports])

    # eval --method cogr --run: query keywords generated by the run's query generator.
    split = split_of_run(load_dataset(sample_catalog_path()), "demo-test", tmp_path)
    generated = evaluate_cogr_run(cluster, index_name, split, "demo-test", tmp_path / "cache", runs_dir=tmp_path,
                                  expander="llm")  # the round has students now: ask for the LLM
    assert generated["method"] == "cogr" and generated["queries"] == result.reports[-1]["queries"]
    assert generated["settings"]["run"] == "demo-test" and generated["settings"]["round"] == 1
    assert generated["settings"]["expander"] == "llm"
