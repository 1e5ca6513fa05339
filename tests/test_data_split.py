"""Query-dimension splits: seeded, disjoint, complete, and every item kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from cogr_search.data import Dataset, Item, Query, choose_split, load_dataset, sample_catalog_path
from cogr_search.data.split import run_split
from cogr_search.errors import InputError


def make(n_queries: int) -> Dataset:
    items = {f"i{k}": Item(f"i{k}", f"item {k}") for k in range(5)}
    queries = {f"q{k}": Query(f"q{k}", f"query {k}") for k in range(n_queries)}
    labels = {q: {"i0": 1.0} for q in queries}
    return Dataset(items, queries, labels, 1.0, "t", sample_catalog_path())


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 60), fraction=st.floats(0.05, 0.95), seed=st.integers(0, 5))
def test_split_partitions_queries_and_keeps_items(n: int, fraction: float, seed: int) -> None:
    ds = make(n)
    train, val = ds.split(fraction, seed)
    assert set(train.queries) | set(val.queries) == set(ds.queries)
    assert not set(train.queries) & set(val.queries)
    assert len(val.queries) == min(n - 1, max(1, round(n * fraction))) and len(train.queries) >= 1
    assert train.items is ds.items and val.items is ds.items
    assert set(val.labels) == set(val.queries)
    assert ds.split(fraction, seed) == (train, val)


def test_split_ignores_file_order_and_depends_on_seed() -> None:
    ds = make(40)
    reordered = ds.subset(reversed(list(ds.queries)))
    assert set(ds.split(0.25, 3)[1].queries) == set(reordered.split(0.25, 3)[1].queries)
    assert set(ds.split(0.25, 3)[1].queries) != set(ds.split(0.25, 4)[1].queries)
    assert len(ds.split(0.25, 3)[1].queries) == 10


def test_choose_split_protocol() -> None:
    ds = load_dataset(sample_catalog_path())
    default = choose_split(ds)
    assert default.split == "val" and choose_split(ds, None) == default  # the paper's protocol by default
    assert default.evaluate.queries.keys() == ds.split(0.1, 0)[1].queries.keys()
    whole = choose_split(ds, "all")
    assert whole.evaluate is ds and whole.tune is None  # nothing left to tune a cutoff on
    val = choose_split(ds, "val", 0.2, 1)
    assert not set(val.evaluate.queries) & set(val.tune.queries)
    assert len(val.evaluate.queries) + len(val.tune.queries) == len(ds.queries)
    train = choose_split(ds, "train", 0.2, 1)
    assert train.evaluate.queries.keys() == val.tune.queries.keys() and train.tune.queries.keys() == val.evaluate.queries.keys()
    with pytest.raises(InputError, match="--split 'test'"):
        choose_split(ds, "test")
    with pytest.raises(InputError, match="split fraction"):
        ds.split(1.5)


def test_run_split_uses_the_recorded_ids(tmp_path) -> None:
    ds = load_dataset(sample_catalog_path())
    ids = sorted(ds.queries)
    recorded = {"train_queries": ids[5:], "val_queries": ids[:5], "items": sorted(ds.items)}
    where = tmp_path / "split.json"
    val = run_split(ds, recorded, where)
    assert list(val.evaluate.queries) == ids[:5] and list(val.tune.queries) == ids[5:]
    assert val.settings["split_source"] == str(where) and len(val.evaluate.items) == len(ds.items)
    train = run_split(ds, recorded, where, "train")
    assert list(train.evaluate.queries) == ids[5:]
    with pytest.raises(InputError, match=r"split.json: 1 val query id\(s\) are not queries of .* \(e.g. 'nope'\)"):
        run_split(ds, {**recorded, "val_queries": ["nope"]}, where)
    with pytest.raises(InputError, match="field 'val_queries': expected a list"):
        run_split(ds, {"train_queries": ids}, where)
    with pytest.raises(InputError, match="--split 'all' with --run"):
        run_split(ds, recorded, where, "all")
