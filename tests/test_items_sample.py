"""`train sft --items N`: a seeded sample of the catalog that holds every judged item of
the training queries, refused in one line (before any run folder exists) when N cannot."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.runs.config import Phase1Config
from cogr_search.training.phase1 import select_split


def _config(**fields: object) -> Phase1Config:
    return Phase1Config(data=str(sample_catalog_path()), model="none", **fields)


def test_the_sample_holds_every_judged_item_of_the_training_queries() -> None:
    dataset = load_dataset(sample_catalog_path())
    split = select_split(dataset, _config(items_sample=150, max_queries=4))
    judged = {i for q in split["train_queries"] for i in dataset.labels[q] if i in dataset.items}
    assert len(split["items"]) == 150 and len(set(split["items"])) == 150
    assert judged <= set(split["items"]) and len(judged) < 150  # the rest are distractors
    assert select_split(dataset, _config(items_sample=150, max_queries=4)) == split  # seeded
    other = select_split(dataset, _config(items_sample=150, max_queries=4, seed=1))
    assert other["items"] != split["items"]


def test_too_small_a_sample_is_refused_before_the_run_is_written(tmp_path: Path, tiny_model: Path) -> None:
    runs = tmp_path / "runs"
    args = ["train", "sft", "--data", str(sample_catalog_path()), "--run", "small", "--runs-dir", str(runs),
            "--model", str(tiny_model), "--items", "5"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and "--items 5" in result.output and "judge" in result.output
    assert not (runs / "small").exists()
    both = CliRunner().invoke(cli, [*args[:-1], "300", "--max-items", "100"])
    assert both.exit_code != 0 and "give one" in both.output and not (runs / "small").exists()
