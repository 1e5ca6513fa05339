"""`bench generate` and `bench rl` with `--backend transformers,vllm`: both engines in one
run, one entry per backend and side with the figures the comparison reads. Output shape
only, on a small random model (vLLM's CPU attention needs a head size of 32 or more, so not
the suite's `tiny_model`); speed is never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import sample_catalog_path
from tests.vllm_support import small_llama, vllm_installed  # noqa: F401 - vllm_installed: autouse fixture

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared small llama (head size 64, which vLLM's CPU attention accepts)."""
    return small_llama(tmp_path_factory.mktemp("small-model"))


def _invoke(args: list[str]):  # noqa: ANN202 - click Result
    return CliRunner().invoke(cli, args, catch_exceptions=True)


def _bench(*args: str) -> dict:
    """One `cogr-search bench` command in its own process (an in-process vLLM engine needs a
    real stdout, which click's CliRunner replaces), its --json object."""
    env = {**os.environ, "COGR_TORCH_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "cogr_search.cli", "bench", *args, "--json"], capture_output=True,
                          text=True, env=env, timeout=1200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _check_entries(figures: dict) -> None:
    pairs = [(entry["backend"], entry["side"]) for entry in figures["results"]]
    assert sorted(pairs) == sorted((b, s) for b in ("transformers", "vllm") for s in ("query", "item"))
    by = {(entry["backend"], entry["side"]): entry for entry in figures["results"]}
    for side in ("query", "item"):
        ratio = by[("vllm", side)]["completions_per_s"] / by[("transformers", side)]["completions_per_s"]
        assert figures[f"vllm_over_transformers_{side}"] == pytest.approx(ratio, rel=0.01)


def test_bench_generate_measures_both_engines_on_both_sides(small_model: Path) -> None:
    figures = _bench("generate", "--model", str(small_model), "--backend", "transformers,vllm", "--prompts", "3",
                     "--batch-size", "2", "--rounds", "1", "--max-new-tokens", "8")
    assert figures["backends"] == ["transformers", "vllm"] and figures["prompts_per_side"] == 3
    _check_entries(figures)
    for entry in figures["results"]:
        assert entry["completions"] == 3 and entry["completions_per_s"] > 0
        assert entry["completions_per_s"] == pytest.approx(3 / entry["seconds"], rel=0.05)
        assert 0 < entry["tokens_per_completion"] <= 8


def test_bench_backend_lists_name_each_engine_once() -> None:
    result = _invoke(["bench", "generate", "--backend", "transformers,transformers", "--json"])
    assert result.exit_code != 0 and "named twice" in result.output


def test_bench_rl_measures_both_rollout_engines_on_both_sides(small_model: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGR_TORCH_THREADS", "1")
    runs = str(tmp_path / "runs")
    sft = _invoke(["train", "sft", "--data", str(sample_catalog_path()), "--run", "bench", "--runs-dir", runs,
                   "--model", str(small_model), "--max-items", "8", "--max-queries", "8", "--max-steps", "1",
                   "--batch-size", "4", "--item-keywords", "6", "--top-n", "6", "--max-length", "128",
                   "--gen-batch-size", "8", "--max-new-tokens", "16", "--backend", "transformers", "--quiet"])
    assert sft.exit_code == 0, sft.output
    figures = _bench("rl", "--run", "bench", "--runs-dir", runs, "--steps", "2", "--num-generations", "2",
                     "--max-completion-length", "8", "--backend", "transformers,vllm")
    assert figures["backends"] == ["transformers", "vllm"]
    assert figures["sampling"] == {"temperature": 1.0, "top_p": 1.0, "top_k": 0} and figures["importance_correction"]
    assert "query_grpo_step_s" not in figures  # the flat form is for one backend only
    _check_entries(figures)
    for entry in figures["results"]:
        assert entry["used_vllm"] is (entry["backend"] == "vllm")
        assert entry["steps_measured"] == 1 and entry["grpo_step_s"] > 0
        # 2 prompts x 2 completions a step
        assert entry["completions_per_s"] == pytest.approx(4 / entry["grpo_step_s"], rel=0.01)
        assert 0 < entry["rollout_s"] and 0 < entry["rollout_time_share"]
        if entry["backend"] == "vllm":  # trl's sync and the CPU engine's repack, timed apart
            assert entry["weight_sync_s"] > 0 and entry["repack_s"] > 0
        else:
            assert entry["weight_sync_s"] is None and entry["repack_s"] is None
    # one backend: the same entries, and the flat figures of the form before the comparison
    one = _bench("rl", "--run", "bench", "--runs-dir", runs, "--steps", "2", "--num-generations", "2",
                 "--max-completion-length", "8", "--backend", "transformers", "--temperature", "0.7", "--top-p", "0.8",
                 "--top-k", "20")
    # the demo preset's sampling: a cut, so no correction, as `train rl` decides (corrects_engine_mismatch)
    assert one["sampling"] == {"temperature": 0.7, "top_p": 0.8, "top_k": 20} and not one["importance_correction"]
    assert [(entry["backend"], entry["side"]) for entry in one["results"]] == [("transformers", "query"),
                                                                           ("transformers", "item")]
    assert one["query_grpo_step_s"] == one["results"][0]["grpo_step_s"] and "vllm_over_transformers_query" not in one
