"""Phase 2 end to end through the CLI on the sample catalog, the real CPU model and a
real OpenSearch node: SFT, then one short round of query-side and item-side GRPO.

Checks that the rewards trl optimised came from the shadow index (recorded rewards equal
a recomputation from the run's own files), that metrics.json and the manifest record
every phase, that a run killed in the middle resumes without redoing finished steps,
and that OpenSearch serves the round's item keywords behind the alias.
Kept tiny for 2 shared cores: 8 items, 8 training queries, 2 GRPO steps per side.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.keywords import parse_keywords
from cogr_search.cluster.indices import alias_target
from cogr_search.shadow import ItemIndex, QueryView
from cogr_search.training import phase2
from cogr_search.training.rewards import QueryF1Reward, completion_text
from cogr_search.runs.run_dir import RunDir

pytestmark = [pytest.mark.opensearch, pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(opensearch_cluster):  # noqa: ANN001, ANN201
    """OpenSearch only: training's end-to-end run (models) is checked once, on the default engine."""
    return opensearch_cluster

SFT = [
    "train", "sft", "--data", str(sample_catalog_path()), "--run", "rl-e2e", "--val-fraction", "0.25",
    "--max-items", "8", "--max-queries", "8", "--max-steps", "3", "--batch-size", "4", "--item-keywords", "6",
    "--top-n", "6", "--learning-rate", "5e-4", "--max-length", "128", "--gen-batch-size", "8",
    "--max-new-tokens", "40", "--quiet",
]


def _invoke(args: list[str], runs: Path):  # noqa: ANN202 - click Result
    return CliRunner().invoke(cli, [*args, "--runs-dir", str(runs)], catch_exceptions=True)


def test_phase2_rewards_metrics_resume_and_sync(
    opensearch_url: str, cluster, index_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model: Path
) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("COGR_TORCH_THREADS", "1")
    sample = str(sample_catalog_path())
    ingested = CliRunner().invoke(cli, ["ingest", sample, "--index", index_name, "--opensearch-url", opensearch_url])
    assert ingested.exit_code == 0, ingested.output
    sft = _invoke([*SFT, "--model", str(tiny_model)], runs)  # a code-path check: a tiny random model
    assert sft.exit_code == 0, sft.output
    rl = [
        "train", "rl", "--run", "rl-e2e", "--rounds", "1", "--query-steps", "2", "--item-steps", "2",
        "--num-generations", "2", "--prompts-per-step", "2", "--max-completion-length", "24",
        "--query-lr", "1e-5", "--item-lr", "1e-5", "--gen-batch-size", "8", "--max-new-tokens", "40",
        "--sync-index", index_name, "--opensearch-url", opensearch_url,
    ]

    # 1. record what the query reward returned; crash the run during item-side GRPO
    recorded: list[tuple[list, list, list]] = []
    original = QueryF1Reward.__call__

    def recording(self, completions, query_id, **kwargs):  # noqa: ANN001, ANN202
        values = original(self, completions, query_id, **kwargs)
        recorded.append(([completion_text(c) for c in completions], list(query_id), values))
        return values

    def crash(ctx: object, round_: int) -> dict:
        raise RuntimeError("simulated crash during item-side GRPO")

    with monkeypatch.context() as patch:
        patch.setattr(QueryF1Reward, "__call__", recording)
        patch.setitem(phase2._ACTIONS, "rl_item", crash)
        first = _invoke([*rl, "--quiet"], runs)
    assert isinstance(first.exception, RuntimeError), first.output
    run = RunDir.open("rl-e2e", runs)
    steps = run.manifest()["steps"]
    assert "round-1/rl_query" in steps and "round-1/query_metrics" in steps and "round-1/rl_item" not in steps
    assert steps["round-1/rl_query"]["steps"] == 2
    query_weights = run.checkpoint_path(1, "query") / "model.safetensors"
    query_mtime = query_weights.stat().st_mtime_ns

    # the rewards trl saw are F1 against the frozen item index of round 0
    dataset = load_dataset(sample_catalog_path())
    split = json.loads(run.split_path.read_text())
    titles = {i: item.title for i, item in dataset.items.items()}
    items = ItemIndex.build(read_keyword_file(run.item_keywords_path(0)), titles)
    texts = {q: dataset.queries[q].text for q in split["train_queries"]}
    round0 = read_keyword_file(run.query_keywords_path(0))
    view = QueryView.build({q: round0.get(q, []) for q in texts}, texts, items, dataset.relevant())
    assert sum(len(values) for _, _, values in recorded) == 2 * 2 * 2  # steps x prompts x generations
    for completions, ids, values in recorded:
        parsed = [parse_keywords(text) for text in completions]
        again = view.query_rewards(ids, [p.keywords for p in parsed], [p.oversized for p in parsed])
        assert values == pytest.approx(list(again))

    # 2. the resume runs only what is left, and does not retrain the query side
    second = _invoke([*rl, "--json"], runs)
    assert second.exit_code == 0, second.output
    report = json.loads(second.stdout)
    assert report["ran"] == ["round-1/rl_item", "round-1/item_keywords", "round-1/item_metrics", "round-1",
                             "round-1/sync"]
    assert "round-1/rl_query" in report["skipped"]
    assert query_weights.stat().st_mtime_ns == query_mtime
    item_step = run.step_info("round-1/rl_item")
    assert item_step["steps"] == 2 and item_step["reward_completions"] == 2 * 2 * 2

    # 3. metrics.json: one entry per phase, with shadow P/R/F1, rewards and keyword space
    metrics = json.loads(run.metrics_path.read_text())
    assert [p["phase"] for p in metrics["phases"]] == ["sft", "rl-query-1", "rl-item-1"]
    for phase in metrics["phases"]:
        assert phase["val"]["queries"] > 0 and 0.0 <= phase["val"]["F1"] <= 1.0
        assert phase["keyword_space"]["item"]["sets"] == 8
    assert metrics["phases"][1]["mean_reward"] is not None
    assert metrics["phases"] == report["phases"]
    assert run.latest_round() == 1 and run.model_tag(1).startswith("rl-e2e+r1+")

    # 4. OpenSearch serves round 1's item keywords behind the alias
    assert alias_target(cluster, index_name).startswith(f"{index_name}--r1-")
    round1 = read_keyword_file(run.item_keywords_path(1))
    hits = cluster.client.search(
        index=index_name, body={"query": {"term": {"cogr_round": 1}}, "size": 50, "_source": ["cogr_keywords", "title"]}
    )["hits"]["hits"]
    assert len(hits) == len(split["items"]) == 8
    for hit in hits:
        assert set(round1[hit["_id"]][:30]) <= set(hit["_source"]["cogr_keywords"])

    # 4b. measured again with 2 query keyword x 2 item index samples: pair 0 is the round's own files
    remeasured = _invoke(["train", "metrics", "--run", "rl-e2e", "--eval-samples", "2", "--item-samples", "2",
                          "--json"], runs)
    assert remeasured.exit_code == 0, remeasured.output
    report = json.loads(remeasured.stdout)
    again = report["phases"]
    assert set(report["curve"]) == {p["phase"] for p in again} and report["settings"]["items"] == 8
    for before, after in zip(metrics["phases"], again):
        point = report["curve"][after["phase"]]
        assert point["mean"] == after["val_F1_mean"] and point["samples"] == 4
        assert point["min"] == min(after["val_F1_samples"]) and point["max"] == max(after["val_F1_samples"])
        assert after["samples"] == {"query": 2, "item": 2}
        assert len(after["val_F1_samples"]) == 4 and after["val_F1_samples"][0] == before["val"]["F1"]
        assert after["val_F1_mean"] == round(sum(after["val_F1_samples"]) / 4, 4)
        assert after["val"] == before["val"] and after["mean_reward"] == before["mean_reward"]
    # 4c. the prompting baseline: the base model's keywords, scored with the same samples
    with_base = _invoke(["train", "metrics", "--run", "rl-e2e", "--eval-samples", "2", "--item-samples", "2",
                         "--zero-shot", "--json"], runs)
    assert with_base.exit_code == 0, with_base.output
    based = json.loads(with_base.stdout)
    zero = based["phases"][0]
    assert zero["phase"] == "zero-shot" and len(zero["val_F1_samples"]) == 4 and "zero-shot" in based["curve"]
    sides = {p["phase"]: p.pop("against_zero_shot") for p in based["phases"][1:]}
    assert based["phases"][1:] == again  # the trained phases as before, each with its sides against zero-shot
    assert {p: based["curve"][p]["against_zero_shot"] for p in sides} == sides
    folder = run.round_dir(0) / "zero-shot"
    # each side against zero-shot is what `train metrics` scores for a copy of the run whose other side's files
    # are the zero-shot ones: round 0's item files (SFT's index) and round 1's query files (rl-item-1's queries)
    swapped = runs / "rl-e2e-swapped"
    shutil.copytree(run.root, swapped)
    for name in ("item_keywords.jsonl", "item_keywords.sample-1.jsonl"):
        shutil.copy(folder / name, swapped / "round-0" / name)
    for name in ("query_keywords.jsonl", "query_keywords.sample-1.jsonl"):
        shutil.copy(folder / name, swapped / "round-1" / name)
    crossed = _invoke(["train", "metrics", "--run", "rl-e2e-swapped", "--eval-samples", "2", "--item-samples", "2",
                       "--json"], runs)
    assert crossed.exit_code == 0, crossed.output
    points = json.loads(crossed.stdout)["curve"]
    assert points["sft"]["mean"] == sides["sft"]["query"]
    assert points["rl-item-1"]["mean"] == sides["rl-item-1"]["item"]
    assert sorted(p.name for p in folder.glob("*.jsonl")) == [
        "item_keywords.jsonl", "item_keywords.sample-1.jsonl", "query_keywords.jsonl", "query_keywords.sample-1.jsonl"]
    assert sorted(read_keyword_file(folder / "item_keywords.jsonl")) == sorted(split["items"])
    for round_ in (0, 1):
        assert (run.round_dir(round_) / "query_keywords.sample-1.jsonl").is_file()
        extra = read_keyword_file(run.round_dir(round_) / "item_keywords.sample-1.jsonl")
        assert sorted(extra) == sorted(split["items"])

    # 5. a finished run has nothing left, with or without its flags; changed settings are refused
    third = _invoke([*rl, "--json"], runs)
    assert third.exit_code == 0 and json.loads(third.stdout)["ran"] == []
    bare = _invoke(["train", "rl", "--run", "rl-e2e", "--json"], runs)  # a resume takes the saved settings
    assert bare.exit_code == 0, bare.output
    assert json.loads(bare.stdout)["ran"] == []
    changed = _invoke([*rl, "--query-lr", "3e-5"], runs)
    assert changed.exit_code == 1 and "query.learning_rate" in changed.output

    # 6. `bench rl` runs real GRPO steps of both sides on the run's data, leaving the run as it was
    manifest = run.manifest_path.read_bytes()
    bench = _invoke(["bench", "rl", "--run", "rl-e2e", "--steps", "2", "--num-generations", "2",
                     "--max-completion-length", "16", "--lora", "--lora-layers", "2", "--json"], runs)
    assert bench.exit_code == 0, bench.output
    figures = json.loads(bench.stdout)
    assert figures["lora"] is True and figures["lora_layers"] == 2 and figures["train_layers"] is None
    for side in ("query", "item"):
        assert figures[f"{side}_steps_measured"] == 1 and figures[f"{side}_grpo_step_s"] > 0
        assert figures[f"{side}_completions_per_s"] == pytest.approx(4 / figures[f"{side}_grpo_step_s"], rel=0.01)
        assert 0 < figures[f"{side}_reward_time_share"] < 1
        # r 16 x (in + out) of each linear layer of the tiny model's top 2 blocks: hidden 64, 2 kv heads x 16, MLP 128
        assert figures[f"{side}_trainable_parameters"] == 2 * 16 * (2 * (64 + 64) + 2 * (64 + 32) + 3 * (64 + 128))
    assert figures["query_prompts"] == len(split["train_queries"])
    assert run.manifest_path.read_bytes() == manifest
