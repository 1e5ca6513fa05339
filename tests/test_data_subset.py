"""`data subset`: seeded queries with every judged item, written as a loadable BEIR folder."""

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
