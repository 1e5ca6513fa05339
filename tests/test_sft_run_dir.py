"""The run directory: manifest, rounds, locking, config checks on resume, run selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.errors import CogrError, InputError
from cogr_search.runs.config import Phase1Config, config_differences
from cogr_search.training.phase1 import _prepare, select_split
from cogr_search.runs.run_dir import RunDir, resolve_run_path, weights_digest


def test_runs_by_name_live_under_runs_dir_and_paths_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_run_path("exp1", tmp_path) == tmp_path / "exp1"
    monkeypatch.setenv("COGR_RUNS_DIR", str(tmp_path / "env"))
    assert resolve_run_path("exp1") == tmp_path / "env" / "exp1"
    assert resolve_run_path(str(tmp_path / "x" / "y")) == tmp_path / "x" / "y"
    with pytest.raises(InputError, match="--run"):
        resolve_run_path("bad name!", tmp_path)


def test_open_missing_run_names_the_manifest(tmp_path: Path) -> None:
    with pytest.raises(CogrError, match="manifest.json"):
        RunDir.open("nope", tmp_path)


def test_manifest_records_steps_and_complete_rounds(tmp_path: Path) -> None:
    run = RunDir.create("r", tmp_path)
    assert run.complete_rounds() == []
    with pytest.raises(CogrError, match="no complete round"):
        run.latest_round()
    entry = run.mark_done("round-0/sft_item", steps=3)
    assert run.is_done("round-0/sft_item") and not run.is_done("round-0")
    assert run.step_info("round-0/sft_item") == entry and entry["steps"] == 3
    run.mark_done("round-0")
    run.mark_done("round-2")
    reopened = RunDir.open("r", tmp_path)
    assert reopened.complete_rounds() == [0, 2]
    assert reopened.latest_round() == 2
    assert reopened.require_round(None) == 2
    with pytest.raises(CogrError, match="round 1 is not complete"):
        reopened.require_round(1)
    # the manifest is plain JSON a person can read
    manifest = json.loads(run.manifest_path.read_text())
    assert set(manifest["steps"]) == {"round-0/sft_item", "round-0", "round-2"}


def test_a_damaged_manifest_is_a_one_line_input_error(tmp_path: Path) -> None:
    run = RunDir.create("r", tmp_path)
    run.manifest_path.write_text("{not json")
    with pytest.raises(InputError, match="manifest.json: line 1"):
        run.is_done("split")


def test_model_tag_uses_recorded_hash_or_hashes_the_weights(tmp_path: Path) -> None:
    run = RunDir.create("r", tmp_path)
    folder = run.checkpoint_path(0, "item")
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    digest = weights_digest(folder)
    assert run.model_tag(0) == f"r+r0+{digest[:12]}"
    run.mark_done("round-0", weights_sha256={"item": "ab" * 32, "query": "cd" * 32})
    assert run.model_tag(0) == "r+r0+" + ("ab" * 6)


def test_one_writer_per_run(tmp_path: Path) -> None:
    run = RunDir.create("r", tmp_path)
    with run.lock():
        with pytest.raises(CogrError, match="in use by another process"):
            with RunDir(run.root).lock():
                pass
    with run.lock():  # released after the first block
        pass


def _config(**changes: object) -> Phase1Config:
    base = {"data": str(sample_catalog_path()), "model": "/models/base", "max_items": 8, "max_queries": 8}
    return Phase1Config.model_validate({**base, **changes})


def test_resume_refuses_different_settings_but_allows_speed_settings(tmp_path: Path) -> None:
    run = RunDir.create("r", tmp_path)
    prompts = _prepare(run, _config())
    stored = run.read_config()
    assert stored["prompts_version"] == prompts.version != ""
    assert json.loads(run.prompts_path.read_text())["version"] == prompts.version
    _prepare(run, _config(generation={"batch_size": 4}))  # speed only: accepted
    with pytest.raises(InputError, match="item_keywords, sft.learning_rate"):
        _prepare(run, _config(item_keywords=5, sft={"learning_rate": 1.0}))


def test_config_differences_are_dotted_paths() -> None:
    assert config_differences({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 5, "d": 3}, "e": 0}) == ["b.c", "e"]


def test_split_caps_queries_and_keeps_relevant_items_first() -> None:
    dataset = load_dataset(sample_catalog_path())
    split = select_split(dataset, _config(max_items=12, max_queries=5))
    assert len(split["train_queries"]) == 5 and len(split["items"]) == 12
    assert split["val_queries"] and not set(split["train_queries"]) & set(split["val_queries"])
    relevant = dataset.relevant()
    items = set(split["items"])
    assert all(relevant[q] & items for q in split["train_queries"])  # every query keeps a relevant item
    assert all(relevant[q] & items for q in split["val_queries"] if q in relevant)  # held-out ones too
    assert select_split(dataset, _config(max_items=12, max_queries=5)) == split  # seeded: reproducible
    full = select_split(dataset, _config(max_items=None, max_queries=None, val_fraction=0.0))
    assert full["val_queries"] == [] and len(full["items"]) == len(dataset.items)


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cogr_search.cli.main import cli

    runner = CliRunner()
    missing = runner.invoke(cli, ["expand", "oak table", "--run", "nope", "--runs-dir", str(tmp_path)])
    assert missing.exit_code == 1
    assert "Error: run 'nope' not found" in missing.output and missing.output.count("\n") == 1
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    bad = runner.invoke(cli, ["train", "sft", "--data", str(sample_catalog_path()), "--run", "r",
                              "--runs-dir", str(tmp_path), "--model", str(model), "--val-fraction", "2"])
    assert bad.exit_code == 1
    assert "Error: option val_fraction" in bad.output
    assert not (tmp_path / "r").exists()  # nothing written for a rejected command
    nomodel = runner.invoke(cli, ["train", "sft", "--data", str(sample_catalog_path()), "--run", "r",
                                  "--runs-dir", str(tmp_path), "--model", str(tmp_path / "none")])
    assert nomodel.exit_code == 1 and "not a folder" in nomodel.output
