"""`data subset`: seeded queries with every judged item, or a run's catalog, written as a loadable BEIR folder."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.data.subset import judged_subset


def test_subset_keeps_every_judged_item_and_label(tmp_path: Path) -> None:
    full = load_dataset(sample_catalog_path())
    out = tmp_path / "hg10"
    result = CliRunner().invoke(cli, ["data", "subset", str(sample_catalog_path()), "--queries", "10", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    part = load_dataset(out)
    assert len(part.queries) == summary["queries"] == 10
    judged = {i for q in part.queries for i in full.labels[q]}
    assert set(part.items) == judged and summary["items"] == len(judged)
    for q in part.queries:
        assert part.labels[q] == full.labels[q]
        assert part.relevant()[q] == full.relevant()[q]  # every relevant item is in the catalog
    assert part.relevance_threshold == full.relevance_threshold
    spec = json.loads((out / "cogr-dataset.json").read_text())
    assert "10 queries (seed 0)" in spec["description"] and spec["name"] == "homegoods-q10-s0"
    assert judged_subset(full, 10, seed=0).queries == part.queries  # seeded: the same queries again
    assert judged_subset(full, 10, seed=1).queries != part.queries


def test_subset_refuses_more_queries_than_exist(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["data", "subset", str(sample_catalog_path()), "--queries", "100000", "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "only" in result.output and not (tmp_path / "x").exists()


def test_subset_to_a_runs_catalog_keeps_every_query_and_the_catalogs_labels(tmp_path: Path) -> None:
    from cogr_search.runs.run_dir import RunDir, atomic_write_json

    full = load_dataset(sample_catalog_path())
    catalog = sorted(full.items)[::3]  # a capped run's catalog: every third item
    run = RunDir.create("capped", tmp_path / "runs")
    atomic_write_json(run.split_path, {"train_queries": [], "val_queries": [], "items": catalog})
    out = tmp_path / "catalog"
    args = ["data", "subset", str(sample_catalog_path()), "--run", "capped", "--runs-dir", str(tmp_path / "runs"),
            "--out", str(out), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    part = load_dataset(out)
    assert sorted(part.items) == catalog and json.loads(result.stdout)["items"] == len(catalog)
    assert set(part.queries) == set(full.queries)  # every query: eval --run picks the run's own
    for q, graded in full.labels.items():
        assert part.labels.get(q, {}) == {i: s for i, s in graded.items() if i in set(catalog)}
    assert "catalog of run 'capped'" in json.loads((out / "cogr-dataset.json").read_text())["description"]


def test_subset_takes_queries_or_a_run_not_both(tmp_path: Path) -> None:
    base = ["data", "subset", str(sample_catalog_path()), "--out", str(tmp_path / "x")]
    both = CliRunner().invoke(cli, [*base, "--queries", "5", "--run", "r"])
    neither = CliRunner().invoke(cli, base)
    for result in (both, neither):
        assert result.exit_code != 0 and "one of the two" in result.output and not (tmp_path / "x").exists()
