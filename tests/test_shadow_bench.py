"""`bench rewards` runs end to end on the shipped sample catalog (figures not asserted)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cogr_search.bench.rewards import ngrams, run
from cogr_search.cli.main import cli
from cogr_search.data import sample_catalog_path

KEYS = {
    "build_s", "memory_mib", "query_rewards_per_s", "item_rewards_per_s",
    "naive_item_rewards_per_s", "item_speedup", "max_abs_diff",
}


def test_ngrams_skip_stop_words_and_cap() -> None:
    assert ngrams("Oak Desk with Drawer") == [
        "oak", "desk", "drawer", "oak desk", "desk with", "with drawer", "oak desk with", "desk with drawer",
    ]
    assert len(ngrams(" ".join(f"w{n}" for n in range(40)), limit=30)) == 30


def test_run_on_the_sample_catalog_agrees_with_naive() -> None:
    result = run(sample_catalog_path(), query_groups=4, item_groups=4, naive_samples=2, passes=1)
    assert KEYS <= set(result)
    assert result["items"] > 0 and result["queries"] > 0
    assert result["max_abs_diff"] < 1e-9  # cached item rewards equal the naive recomputation


def test_cli_json_output() -> None:
    outcome = CliRunner().invoke(
        cli, ["bench", "rewards", "--data", str(sample_catalog_path()), "--groups", "2", "--naive-samples", "1",
              "--passes", "1", "--json"],
    )
    assert outcome.exit_code == 0, outcome.output
    payload = json.loads(outcome.stdout)
    assert KEYS <= set(payload) and payload["group"] == 8


def test_cli_rejects_a_missing_directory(tmp_path) -> None:
    outcome = CliRunner().invoke(cli, ["bench", "rewards", "--data", str(tmp_path / "nope")])
    assert outcome.exit_code != 0
    assert "does not exist" in outcome.output
