"""The shadow index at catalog scale: copied catalogs, bounded scratch, `bench rewards --scale`."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner

from cogr_search.bench import reward_scale
from cogr_search.bench.rewards import KeywordCatalog, build_views, item_batches, query_batches
from cogr_search.bench.scaled_catalog import scale
from cogr_search.cli.main import cli
from cogr_search.data import sample_catalog_path
from cogr_search.shadow import postings

POINT_FIELDS = {
    "items", "queries", "build_s", "rss_build_mib", "rss_after_rewards_mib", "rss_bytes_per_item", "memory_mib",
    "query_rewards_per_s", "item_rewards_per_s", "item_rewards_batched_per_s", "mean_retrieved_items",
    "mean_affected_queries", "peak_rss_mib",
}


@pytest.fixture(scope="module")
def base() -> KeywordCatalog:
    return KeywordCatalog.load(sample_catalog_path())


def _scaled(base: KeywordCatalog, n_items: int, vocabulary: str):
    return scale(base, n_items, vocabulary)


def test_copies_keep_the_query_ratio_and_labels(base: KeywordCatalog) -> None:
    n = len(base.titles)
    catalog = _scaled(base, 2 * n + 3, "per-copy")
    assert len(list(catalog.titles)) == 2 * n + 3
    assert catalog.n_queries == round((2 * n + 3) * len(base.query_texts) / n)
    query_id = next(q for q in base.query_texts if q in base.relevant)
    assert catalog.relevant[f"{query_id}@1"] == {f"{i}@1" for i in base.relevant[query_id]}
    item_id = next(iter(base.titles))
    assert catalog.item_keywords[f"{item_id}@1"] == [f"{k} c1" for k in base.item_keywords[item_id]]
    assert catalog.item_keywords[item_id] == base.item_keywords[item_id]  # copy 0 is the base catalog
    assert f"{item_id}@3" not in catalog.titles
    shared = _scaled(base, 2 * n, "shared")
    assert shared.item_keywords[f"{item_id}@1"] == base.item_keywords[item_id]


def test_per_copy_vocabulary_keeps_rewards_of_the_base_catalog(base: KeywordCatalog) -> None:
    """Copies with their own keywords are independent worlds: a copy's rewards equal the base's."""
    n = len(base.titles)
    small = build_views(base, 30)[1]
    catalog = _scaled(base, 3 * n, "per-copy")
    large = build_views(catalog, 30)[1]
    rng = random.Random(1)
    for query_id, candidates in query_batches(base, rng, 5, 4):
        tagged = [catalog.tag_keywords(c, 2) for c in candidates]
        assert np.allclose(small.query_rewards(query_id, candidates), large.query_rewards(f"{query_id}@2", tagged))
    for item_id, candidates in item_batches(base, rng, 5, 4):
        tagged = [catalog.tag_keywords(c, 1) for c in candidates]
        assert np.allclose(small.item_rewards(item_id, candidates), large.item_rewards(f"{item_id}@1", tagged))


def test_scratch_in_row_blocks_gives_the_same_rewards(base: KeywordCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unions and membership tests split into blocks of rows when the scratch would be large."""
    rng = random.Random(2)
    q_batches, i_batches = query_batches(base, rng, 6, 8), item_batches(base, rng, 6, 8)
    ids = [item_id for item_id, group in i_batches for _ in group]
    lists = [keywords for _, group in i_batches for keywords in group]

    def rewards() -> tuple[np.ndarray, np.ndarray]:
        view = build_views(base, 30)[1]
        query = np.concatenate([view.query_rewards(q, c) for q, c in q_batches])
        return query, view.item_rewards(ids, lists)

    whole = rewards()
    monkeypatch.setattr(postings, "_SCRATCH_CELLS", 3 * len(base.titles))  # blocks of 3 rows
    blocked = rewards()
    assert np.any(whole[0] > 0) and np.any(whole[1] != 0)
    assert np.allclose(whole[0], blocked[0]) and np.allclose(whole[1], blocked[1])


def test_scale_sweep_reports_each_size(base: KeywordCatalog) -> None:
    n = len(base.titles)
    outcome = CliRunner().invoke(cli, [
        "bench", "rewards", "--data", str(sample_catalog_path()), "--scale", "--scale-items", f"{n},{2 * n}",
        "--groups", "3", "--passes", "1", "--json",
    ])
    assert outcome.exit_code == 0, outcome.output
    result = json.loads(outcome.stdout)
    assert result["stopped"] is None
    assert [p["items"] for p in result["points"]] == [n, 2 * n]
    for point in result["points"]:
        assert POINT_FIELDS <= set(point)
        assert point["max_abs_diff_batched"] < 1e-9
    # per-copy vocabulary: the same work per reward at both sizes
    assert result["points"][0]["mean_retrieved_items"] == result["points"][1]["mean_retrieved_items"]
    assert set(result["growth"][0]) >= {"build_s", "rss_after_rewards_mib", "query_time_per_reward", "item_time_per_reward"}


def test_scale_sweep_stops_at_the_memory_limit(base: KeywordCatalog) -> None:
    n = len(base.titles)
    result = reward_scale.run(sample_catalog_path(), sizes=[n, 2 * n], groups=1, passes=1, max_rss_gib=0.01)
    assert result["points"] == []  # the first size passed 10 MiB, the second never ran
    assert result["stopped"]["items"] == n and "RSS reached" in result["stopped"]["reason"]


def test_sizes_below_the_catalog_are_refused(base: KeywordCatalog) -> None:
    outcome = CliRunner().invoke(cli, ["bench", "rewards", "--data", str(sample_catalog_path()), "--scale",
                                       "--scale-items", "10"])
    assert outcome.exit_code == 1
    assert f"--scale-items: 10 is smaller than {sample_catalog_path()} ({len(base.titles)} items)" in outcome.output


def test_scale_items_must_be_counts() -> None:
    outcome = CliRunner().invoke(cli, ["bench", "rewards", "--data", str(sample_catalog_path()), "--scale",
                                       "--scale-items", "55000,lots"])
    assert outcome.exit_code != 0
    assert "'lots' is not an item count" in outcome.output


def test_a_large_parent_does_not_count_toward_the_childs_peak(base: KeywordCatalog) -> None:
    """Linux hands a parent's RSS high-water mark to the child it forks (ru_maxrss): the
    sweep's child measures its own address space, so a test run that loaded models (or
    any big caller) does not stop the sweep at its first size."""
    n = len(base.titles)
    ballast = np.ones(3 * 2**30 // 8)  # 3 GiB resident in this process
    result = reward_scale.run(sample_catalog_path(), sizes=[n], groups=1, passes=1, max_rss_gib=2.0)
    assert ballast[-1] == 1.0
    assert result["stopped"] is None, result["stopped"]
    assert result["points"][0]["peak_rss_mib"] < 2048
