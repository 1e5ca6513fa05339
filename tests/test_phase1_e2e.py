"""Phase 1 end to end on the sample catalog through the CLI: a crash in the middle, a
resume that does not redo finished steps, keyword files for every item and query, and
`expand` on the trained query generator.

The flow is checked, not what the model learns, so the run uses the tiny random model
(its outputs are comma lists of noise, which parse). That SFT teaches the real CPU model
the list format is checked in tests/test_sft_train.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import sample_catalog_path
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.training import phase1
from cogr_search.runs.run_dir import RunDir

pytestmark = [pytest.mark.model, pytest.mark.slow]

ARGS = [
    "train", "sft", "--data", str(sample_catalog_path()), "--run", "e2e",
    "--max-items", "8", "--max-queries", "8", "--max-steps", "3", "--batch-size", "4",
    "--max-length", "128", "--gen-batch-size", "8", "--max-new-tokens", "48",
]


def _invoke(args: list[str], runs: Path):  # noqa: ANN202 - click Result
    return CliRunner().invoke(cli, [*args, "--runs-dir", str(runs)], catch_exceptions=True)


def test_phase1_resumes_and_writes_keyword_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model: Path) -> None:
    runs = tmp_path / "runs"
    args = [*ARGS, "--model", str(tiny_model)]

    # 1. a crash while training the query generator
    def crash(ctx: object) -> dict:
        raise RuntimeError("simulated crash during query SFT")

    with monkeypatch.context() as patch:
        patch.setitem(phase1._ACTIONS, "round-0/sft_query", crash)
        first = _invoke([*args, "--quiet"], runs)
    assert isinstance(first.exception, RuntimeError)
    run = RunDir.open("e2e", runs)
    done_before = ["split", "round-0/query_context", "round-0/base_item_keywords", "round-0/query_targets",
                   "round-0/sft_item"]
    assert sorted(run.manifest()["steps"]) == sorted(done_before)
    item_step = run.step_info("round-0/sft_item")
    weights = run.checkpoint_path(0, "item") / "model.safetensors"
    weights_mtime = weights.stat().st_mtime_ns
    base = read_keyword_file(run.base_item_keywords_path)
    assert len(base) == 8 and sum(1 for k in base.values() if k) >= 6  # few-shot base keywords

    # 2. a resume finishes the remaining steps only
    second = _invoke([*args, "--json"], runs)
    assert second.exit_code == 0, second.output
    report = json.loads(second.stdout)  # --json: exactly one object on stdout
    assert report["skipped"] == done_before
    assert report["ran"] == ["round-0/sft_query", "round-0/item_keywords", "round-0/query_keywords", "round-0"]
    assert run.step_info("round-0/sft_item") == item_step
    assert weights.stat().st_mtime_ns == weights_mtime  # the item generator was not retrained
    assert report["details"]["round-0/sft_query"]["steps"] == 3

    # 3. keyword files for every item and every training and validation query
    split = json.loads(run.split_path.read_text())
    items = read_keyword_file(run.item_keywords_path(0))
    assert sorted(items) == sorted(split["items"])
    non_empty = sum(1 for keywords in items.values() if keywords)
    assert non_empty >= 6, items
    queries = read_keyword_file(run.query_keywords_path(0))
    assert sorted(queries) == sorted(split["train_queries"] + split["val_queries"])
    assert run.latest_round() == 0
    assert run.model_tag(0).startswith("e2e+r0+")

    # 4. a third run has nothing left to do and leaves the manifest untouched
    manifest_bytes = run.manifest_path.read_bytes()
    third = _invoke([*args, "--json"], runs)
    assert third.exit_code == 0, third.output
    again = json.loads(third.stdout)
    assert again["ran"] == [] and again["skipped"] == list(phase1.STEPS)
    assert run.manifest_path.read_bytes() == manifest_bytes

    # 5. other settings are refused with the fields named
    changed = _invoke([*args, "--item-keywords", "5"], runs)
    assert changed.exit_code == 1
    assert "item_keywords" in changed.output and "other settings" in changed.output

    # 6. expand prints the trained query generator's keywords
    expanded = _invoke(["expand", "oak dining table", "--run", "e2e", "--json"], runs)
    assert expanded.exit_code == 0, expanded.output
    payload = json.loads(expanded.stdout)
    assert payload["round"] == 0 and payload["keywords"]
    from cogr_search.generators.backend_choice import resolve_backend

    assert payload["backend"] == resolve_backend("auto")  # the engine by name (the suite's COGR_BACKEND)
    assert len(payload["keywords"]) <= 30
    lines = _invoke(["expand", "oak dining table", "--run", "e2e"], runs)
    assert lines.exit_code == 0
    assert lines.stdout.split("\n")[:-1] == payload["keywords"]  # same seed, one keyword per line
