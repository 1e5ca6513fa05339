"""The main job speaks in its own voice: `train sft`, `train rl`, `sync` and `eval`, each
run in its own process as a person or a CI job runs them (stderr a pipe, kept as a log),
print their own lines and nothing of the libraries underneath: no trainer log dicts, no
Python warnings (transformers' FutureWarning about `is_gradient_checkpointing` came
with every GRPO phase), no progress bars. The trainers' log entries are in the run's
train.log instead.

The flow is checked, not what a model learns: the tiny random model trains.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cogr_search.data import sample_catalog_path
from cogr_search.runs.config import SFTConfig
from cogr_search.runs.run_dir import RunDir

pytestmark = [pytest.mark.model, pytest.mark.slow]

SAMPLE = str(sample_catalog_path())
SFT = ["train", "sft", "--data", SAMPLE, "--run", "quiet", "--max-items", "6", "--max-queries", "6",
       "--max-steps", "2", "--batch-size", "4", "--max-length", "128", "--gen-batch-size", "8",
       "--max-new-tokens", "24"]
RL = ["train", "rl", "--run", "quiet", "--rounds", "1", "--query-steps", "1", "--item-steps", "1",
      "--num-generations", "2", "--prompts-per-step", "2", "--max-completion-length", "16", "--gen-batch-size", "8",
      "--max-new-tokens", "24", "--no-screen"]

NOISE = {
    "a trainer log dict": re.compile(r"\{'[a-z_/]+': "),
    "a Python warning": re.compile(r"\b[A-Z]\w*Warning: "),
    "a progress bar": re.compile(r"\r|\d+%\||\bit/s\]"),
}


def _cli(*args: str) -> subprocess.CompletedProcess:
    """One `cogr-search` command in its own process, stdout and stderr captured (pipes)."""
    env = {**os.environ, "COGR_TORCH_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "cogr_search.cli", *args], capture_output=True, text=True, env=env,
                          timeout=1200, check=False)


def _assert_own_voice(done: subprocess.CompletedProcess) -> None:
    """Exit 0, and stderr holds none of the libraries' noise (the failing line is shown)."""
    assert done.returncode == 0, done.stderr[-3000:]
    for what, pattern in NOISE.items():
        found = pattern.search(done.stderr)
        assert found is None, f"{what} on stderr: {done.stderr[max(0, found.start() - 200):found.end() + 200]!r}"


def _log_entries(run: RunDir) -> list[dict]:
    return [json.loads(line) for line in run.train_log_path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """A Phase 1 run of the tiny model logging every step, and how `train sft` went."""
    folder = tmp_path_factory.mktemp("quiet")
    config = folder / "phase1.json"
    config.write_text(json.dumps({"sft": {"logging_steps": 1}}))
    done = _cli(*SFT, "--model", str(tiny_model), "--config", str(config), "--runs-dir", str(folder / "runs"))
    return folder / "runs", done


def test_train_sft_and_rl_print_one_line_per_step_and_log_the_trainer(
    sft_run: tuple[Path, subprocess.CompletedProcess], tmp_path: Path
) -> None:
    runs, sft = sft_run
    _assert_own_voice(sft)
    steps = [line for line in sft.stderr.splitlines() if line.startswith("[quiet] round-0/sft_")]
    assert steps[0] == "[quiet] round-0/sft_item ..." and steps[1].startswith("[quiet] round-0/sft_item done in ")
    run = RunDir.open("quiet", runs)
    entries = _log_entries(run)
    for side in ("item", "query"):
        losses = [e for e in entries if e["phase"] == f"sft round-0/{side}" and "loss" in e]
        assert [e["step"] for e in losses] == [1, 2], entries  # logging_steps 1: every step, in the log
    assert any("train_runtime" in e for e in entries)  # the closing summary the trainer used to print

    # GRPO: the phases whose rollouts read `is_gradient_checkpointing` (a FutureWarning each)
    shutil.copytree(runs, tmp_path / "runs")  # the module's Phase 1 run stays as it was
    rl = _cli(*RL, "--runs-dir", str(tmp_path / "runs"))
    _assert_own_voice(rl)
    assert "[quiet] round-1/rl_query done in " in rl.stderr
    grpo = [e for e in _log_entries(RunDir.open("quiet", tmp_path / "runs")) if e["phase"].startswith("grpo ")]
    assert {e["phase"] for e in grpo} == {"grpo round-1/query", "grpo round-1/item"}
    assert any("reward" in e for e in grpo), grpo


def test_sync_and_eval_print_only_their_own_lines(
    sft_run: tuple[Path, subprocess.CompletedProcess], opensearch_url: str, index_name: str
) -> None:
    runs, sft = sft_run
    assert sft.returncode == 0, sft.stderr[-3000:]
    ingest = _cli("ingest", SAMPLE, "--index", index_name, "--opensearch-url", opensearch_url)
    assert ingest.returncode == 0, ingest.stderr
    sync = _cli("sync", "--index", index_name, "--run", "quiet", "--missing", "title-only", "--runs-dir", str(runs),
                "--opensearch-url", opensearch_url)
    _assert_own_voice(sync)
    assert re.match(rf"{index_name} -> {index_name}-+r0-\d+ ", sync.stdout), sync.stdout  # round 0 now serves
    # the run's query generator writes the held-out queries' keywords: a model load and generation
    evaluated = _cli("eval", "--data", SAMPLE, "--index", index_name, "--method", "cogr", "--run", "quiet",
                     "--expander", "llm", "--runs-dir", str(runs), "--opensearch-url", opensearch_url)
    _assert_own_voice(evaluated)
    assert "F1" in evaluated.stdout


def test_a_training_bar_carries_no_log_entries(tmp_path: Path, tiny_model: Path, capfd: pytest.CaptureFixture) -> None:
    """With a bar (`progress`, a terminal's case) transformers writes every log entry under
    it; they go to the log file instead, and the bar stays."""
    from cogr_search.generators.prompts import assistant_text, load_prompts
    from cogr_search.training.sft import SFTExample, train_sft

    prompts = load_prompts()
    examples = [SFTExample(prompts.item_messages(title, "", 10), assistant_text(keywords))
                for title, keywords in [("Oak table", ["oak table"]), ("Velvet chair", ["velvet chair"])]]
    log = tmp_path / "train.log"
    config = SFTConfig(max_steps=2, batch_size=2, max_length=96, save_steps=100, logging_steps=1)
    train_sft(tiny_model, examples, tmp_path / "round-0" / "item", config, progress=True, log_path=log)
    out, err = capfd.readouterr()
    assert "'loss'" not in out + err
    assert "2/2" in err  # the bar itself was drawn
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [e["step"] for e in entries if "loss" in e] == [1, 2]
    assert {e["phase"] for e in entries} == {"sft round-0/item"}
