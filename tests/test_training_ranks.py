"""Training in two data-parallel processes on CPU (gloo), through `--processes 2`: real OS
processes started by accelerate's launcher, a real process group, the tiny model and the
session's real OpenSearch node.

Checks that Phase 1 shards the base keywords and its file equals the single-process
one (per-row seeds), that SFT and one GRPO round of each side run data-parallel and say
so in the manifest, that rank 0 alone writes (one summary, one row per id, one index
version per synced round), that killing one rank mid-GRPO ends the run with one line
naming it, that one process then resumes the phase from its last checkpoint, and that
`train metrics --processes 2` writes the same samples and reports the same curve as one
process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.cluster.indices import alias_target
from cogr_search.data import sample_catalog_path
from cogr_search.generators.backend import INIT
from cogr_search.generators.batch_generate import generate_with_model, item_requests
from cogr_search.generators.prompts import load_prompts
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.runs.run_dir import RunDir, read_json

pytestmark = [pytest.mark.opensearch, pytest.mark.model, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
SFT = [
    "train", "sft", "--data", str(sample_catalog_path()), "--run", "ranks", "--val-fraction", "0.25",
    "--max-items", "8", "--max-queries", "8", "--max-steps", "1", "--batch-size", "4", "--item-keywords", "6",
    "--top-n", "6", "--max-length", "128", "--gen-batch-size", "4", "--max-new-tokens", "24", "--quiet",
]
RL = [
    "train", "rl", "--run", "ranks", "--query-steps", "2", "--item-steps", "1", "--num-generations", "2",
    "--prompts-per-step", "2", "--max-completion-length", "16", "--gen-batch-size", "4", "--max-new-tokens", "24",
    "--save-steps", "1", "--quiet",
]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "COGR_TORCH_THREADS": "1", "COGR_RANK_TIMEOUT_S": "180"}


def _command(args: list[str], runs: Path) -> list[str]:
    return [sys.executable, "-m", "cogr_search.cli", *args, "--runs-dir", str(runs)]


def _run(args: list[str], runs: Path) -> subprocess.CompletedProcess:
    return subprocess.run(_command(args, runs), env=_env(), capture_output=True, text=True, timeout=400)


def _rank_process(launcher: psutil.Process, rank: int) -> psutil.Process | None:
    for child in launcher.children(recursive=True):
        try:
            if child.environ().get("RANK") == str(rank) and "cogr_search.cli" in child.cmdline():
                return child
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return None


def _versions(cluster, alias: str, round_: int) -> list[str]:  # noqa: ANN001
    return sorted(cluster.client.indices.get(index=f"{alias}--r{round_}-*", expand_wildcards="all"))


def test_two_processes_train_write_once_sync_once_and_resume_after_a_killed_rank(
    opensearch_url: str, opensearch_cluster, index_name: str, tmp_path: Path, tiny_model: Path
) -> None:
    runs = tmp_path / "runs"
    ingested = CliRunner().invoke(cli, ["ingest", str(sample_catalog_path()), "--index", index_name,
                                        "--opensearch-url", opensearch_url])
    assert ingested.exit_code == 0, ingested.output

    # 1. Phase 1 in two processes: one summary, every data-parallel step recorded with N = 2
    sft = _run([*SFT, "--model", str(tiny_model), "--processes", "2"], runs)
    assert sft.returncode == 0, sft.stderr[-3000:]
    assert sft.stdout.count("run ranks:") == 1  # rank 0 alone reports
    run = RunDir.open("ranks", runs)
    steps = run.manifest()["steps"]
    for step in ("round-0/base_item_keywords", "round-0/sft_item", "round-0/sft_query", "round-0/item_keywords",
                 "round-0/query_keywords"):
        assert steps[step]["processes"] == 2, step
    assert steps["split"]["processes"] == 1 and steps["round-0/sft_item"]["steps"] == 1

    # the base keywords equal the single-process generation with the same batch size, byte for byte
    config = run.config()
    split = read_json(run.split_path)
    from cogr_search.data import load_dataset

    dataset = load_dataset(sample_catalog_path())
    requests = item_requests(load_prompts(run.prompts_path), [dataset.items[i] for i in split["items"]],
                             config.item_keywords, few_shot=config.few_shot_init)
    single = tmp_path / "single" / "base_item_keywords.jsonl"
    generate_with_model(tiny_model, requests, single,
                        INIT.with_(max_new_tokens=config.generation.max_new_tokens, seed=config.generation.seed),
                        backend="transformers", dtype=config.generation.dtype, batch_size=config.generation.batch_size,
                        keep=config.item_keywords, progress=False)
    assert run.base_item_keywords_path.read_bytes() == single.read_bytes()
    for path in (run.item_keywords_path(0), run.query_keywords_path(0)):
        lines = path.read_text().splitlines()
        assert len(lines) == len(read_keyword_file(path))  # one writer: no id twice
    assert sorted(read_keyword_file(run.item_keywords_path(0))) == split["items"]

    # 2. two rounds of GRPO in two processes; rank 1 is killed once round 2's query side
    #    saved its first checkpoint
    work = run.checkpoint_path(2, "query").with_name("query.work")
    launcher = subprocess.Popen(
        _command([*RL, "--rounds", "2", "--sync-index", index_name, "--opensearch-url", opensearch_url,
                  "--processes", "2"], runs),
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not (work / "checkpoint-1" / "trainer_state.json").is_file():
            assert launcher.poll() is None, launcher.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "query-side GRPO of round 2 saved no checkpoint"
            time.sleep(0.2)  # polling for the checkpoint; the kill itself is what is tested
        rank1 = _rank_process(psutil.Process(launcher.pid), 1)
        assert rank1 is not None
        rank1.send_signal(signal.SIGKILL)
        _, stderr = launcher.communicate(timeout=300)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
    assert launcher.returncode == 1
    last = [line for line in stderr.splitlines() if line.strip()][-1]
    assert last.startswith("Error: rank 1 of 2 failed (killed by SIGKILL)"), stderr[-3000:]
    assert not any(p.info["cmdline"] and "cogr_search.cli" in p.info["cmdline"] and str(runs) in p.info["cmdline"]
                   for p in psutil.process_iter(["cmdline"]))  # no rank left behind

    # round 1 ran data-parallel and rank 0 alone synced it, once
    steps = run.manifest()["steps"]
    for side in ("query", "item"):
        info = steps[f"round-1/rl_{side}"]
        assert info["processes"] == 2 and info["steps"] == {"query": 2, "item": 1}[side]
        # both ranks' rollouts: steps x prompts x generations
        assert info["reward_completions"] == info["steps"] * 2 * 2
    assert steps["round-1/sync"]["processes"] == 1
    assert len(_versions(opensearch_cluster, index_name, 1)) == 1
    assert alias_target(opensearch_cluster, index_name).startswith(f"{index_name}--r1-")
    assert [p["phase"] for p in read_json(run.metrics_path)["phases"]] == ["sft", "rl-query-1", "rl-item-1"]
    assert "round-2/rl_query" not in steps

    # 3. one process resumes the phase from the checkpoint the two left, and finishes the round
    resumed = CliRunner().invoke(cli, [*RL, "--rounds", "2", "--sync-index", index_name,
                                       "--opensearch-url", opensearch_url, "--runs-dir", str(runs), "--json"])
    assert resumed.exit_code == 0, resumed.output
    steps = run.manifest()["steps"]
    assert steps["round-2/rl_query"]["processes"] == 1 and steps["round-2/rl_query"]["steps"] == 2
    assert steps["round-2/rl_query"]["resumed_from"].startswith("checkpoint-")
    assert steps["round-1/rl_query"]["processes"] == 2  # not redone
    assert alias_target(opensearch_cluster, index_name).startswith(f"{index_name}--r2-")
    assert len(_versions(opensearch_cluster, index_name, 2)) == 1

    # 4. train metrics in two processes: the same extra samples (bytes) and the same report as
    #    one process on a copy of the run; rank 0 alone prints it
    shutil.copytree(runs, tmp_path / "single-runs")
    measure = ["train", "metrics", "--run", "ranks", "--eval-samples", "2", "--item-samples", "2", "--zero-shot",
               "--json"]
    two = _run([*measure, "--processes", "2"], runs)
    assert two.returncode == 0, two.stderr[-3000:]
    one = _run(measure, tmp_path / "single-runs")
    assert one.returncode == 0, one.stderr[-3000:]
    two_report, one_report = json.loads(two.stdout), json.loads(one.stdout)  # one JSON document each
    assert two_report["curve"] == one_report["curve"]
    assert set(two_report["curve"]) == {"zero-shot", "sft", "rl-query-1", "rl-item-1", "rl-query-2", "rl-item-2"}
    written = sorted(p.relative_to(runs) for p in runs.rglob("*.sample-*.jsonl"))
    assert any("zero-shot" in str(p) for p in written) and any("round-2" in str(p) for p in written)
    for relative in written:
        assert (runs / relative).read_bytes() == (tmp_path / "single-runs" / relative).read_bytes(), relative
