"""Saving and loading a shadow index: same answers after a round trip, clear errors."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from cogr_search.errors import InputError
from cogr_search.shadow import ItemIndex, QueryView, load_shadow, save_shadow

TITLES = {"i1": "Lamp", "i2": "Desk", "i3": "Chair ü", "i4": "Sofa"}
ITEM_KEYWORDS = {"i1": ["light", "table lamp"], "i2": ["table", "office"], "i3": ["seat", "office"]}
QUERY_TEXTS = {"q1": "lamp", "q2": "office chair", "q3": "sofa"}
QUERY_KEYWORDS = {"q1": ["light"], "q2": ["office"]}
RELEVANT = {"q1": {"i1"}, "q2": {"i3", "i4"}}


def _views() -> tuple[ItemIndex, QueryView]:
    items = ItemIndex.build(ITEM_KEYWORDS, TITLES, k_max=5)
    return items, QueryView.build(QUERY_KEYWORDS, QUERY_TEXTS, items, RELEVANT, k_max=5)


def test_round_trip_keeps_every_answer(tmp_path: Path) -> None:
    items, queries = _views()
    path = save_shadow(tmp_path / "sub" / "shadow.npz", items, queries)
    loaded = load_shadow(path)
    assert loaded.queries is not None
    assert loaded.items.item_ids == items.item_ids
    assert [loaded.items.keywords_of(i) for i in TITLES] == [items.keywords_of(i) for i in TITLES]
    assert loaded.items.k_max == 5 and loaded.queries.k_max == 5
    assert loaded.items.search(["office", "lamp"]) == items.search(["office", "lamp"])
    for query_id in QUERY_TEXTS:
        assert loaded.queries.counts(query_id) == queries.counts(query_id)
        assert loaded.queries.keywords_of(query_id) == queries.keywords_of(query_id)
    candidates = [["office", "lamp"], [], ["sofa"], [f"k{n}" for n in range(6)]]
    for item_id in TITLES:
        np.testing.assert_allclose(loaded.queries.item_rewards(item_id, candidates), queries.item_rewards(item_id, candidates))
    np.testing.assert_allclose(loaded.queries.query_rewards("q2", candidates), queries.query_rewards("q2", candidates))
    assert [p.name for p in path.parent.iterdir()] == ["shadow.npz"]  # no temp file left


def test_item_view_alone(tmp_path: Path) -> None:
    items, _ = _views()
    loaded = load_shadow(save_shadow(tmp_path / "items.npz", items))
    assert loaded.queries is None
    assert loaded.items.retrieved(["office"]) == ["i2", "i3"]


def test_the_file_is_pickle_free(tmp_path: Path) -> None:
    items, queries = _views()
    path = save_shadow(tmp_path / "shadow.npz", items, queries)
    with np.load(path, allow_pickle=False) as data:  # would raise on object arrays
        assert all(data[name].dtype != object for name in data.files)


def test_query_view_must_belong_to_the_item_index(tmp_path: Path) -> None:
    items, queries = _views()
    other, _ = _views()
    with pytest.raises(ValueError):
        save_shadow(tmp_path / "x.npz", other, queries)


def test_bad_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_shadow(tmp_path / "missing.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="junk.npz: not a shadow index file"):
        load_shadow(junk)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, header=np.frombuffer(b'{"format": "other"}', dtype=np.uint8))
    with pytest.raises(InputError, match="format 'other'"):
        load_shadow(foreign)
    future = tmp_path / "future.npz"
    np.savez(future, header=np.frombuffer(b'{"format": "cogr-shadow-index", "version": 99}', dtype=np.uint8))
    with pytest.raises(InputError, match="version 99 is not supported"):
        load_shadow(future)
    items, _ = _views()
    path = save_shadow(tmp_path / "cut.npz", items)
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(tmp_path / "cut2.npz", "w") as target:
        for name in source.namelist():
            if name != "item_terms.npy":
                target.writestr(name, source.read(name))
    with pytest.raises(InputError, match="missing array 'item_terms'"):
        load_shadow(tmp_path / "cut2.npz")
