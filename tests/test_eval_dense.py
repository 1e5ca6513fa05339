"""The dense baseline with the real all-MiniLM-L6-v2 weights (offline, CPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cogr_search.data import Item
from cogr_search.dense import build_dense_index, cached_embeddings, item_text

pytestmark = pytest.mark.model

ITEMS = {
    "t": Item("t", "Solid oak dining table", "Seats six."),
    "l": Item("l", "Brass floor lamp", ""),
    "r": Item("r", "Wool area rug 8x10", "Hand-knotted."),
    "s": Item("s", "Cast iron skillet", "Pre-seasoned, 12 inch."),
}


def test_dense_ranks_by_meaning_and_caches_item_embeddings(tmp_path: Path) -> None:
    first = build_dense_index(ITEMS, tmp_path, progress=False)
    assert not first.from_cache
    assert first.vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(first.vectors, axis=1), 1.0, atol=1e-4)
    ranked = first.rank({"q1": "kitchen table made of wood", "q2": "frying pan"}, depth=4)
    assert ranked["q1"][0] == "t" and ranked["q2"][0] == "s"
    assert sorted(ranked["q1"]) == sorted(ITEMS)
    second = build_dense_index(ITEMS, tmp_path, progress=False)
    assert second.from_cache and np.array_equal(first.vectors, second.vectors)
    changed = dict(ITEMS, l=Item("l", "Brass floor lamp", "Dimmable."))
    assert not build_dense_index(changed, tmp_path, progress=False).from_cache  # new texts, new key


def test_interrupted_embedding_resumes_from_finished_chunks(tmp_path: Path, monkeypatch) -> None:
    from cogr_search import dense

    monkeypatch.setattr(dense, "CHUNK", 2)
    texts = [item_text(i.title, i.description) for i in ITEMS.values()]
    encoder = dense.DenseEncoder()
    calls: list[int] = []
    real_encode = encoder.encode

    def encode_then_crash(chunk, desc=None):
        if calls:
            raise KeyboardInterrupt
        calls.append(len(chunk))
        return real_encode(chunk)

    monkeypatch.setattr(encoder, "encode", encode_then_crash)
    with pytest.raises(KeyboardInterrupt):
        cached_embeddings(encoder, texts, tmp_path, progress=False)
    monkeypatch.setattr(encoder, "encode", lambda chunk, desc=None: calls.append(len(chunk)) or real_encode(chunk))
    vectors, from_cache = cached_embeddings(encoder, texts, tmp_path, progress=False)
    assert calls == [2, 2] and not from_cache and vectors.shape == (4, 384)  # only the second chunk recomputed


def test_dense_ties_are_broken_by_item_id() -> None:
    from cogr_search.dense import DenseIndex, top_k

    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [1.0, 0.0], [1.0, 0.0]], dtype=np.float32)  # three identical items
    query = np.array([[1.0, 0.0]], dtype=np.float32)
    assert top_k(query, vectors, 4).tolist() == [[0, 2, 3, 1]]  # by index
    index = DenseIndex(["sku-9", "sku-1", "sku-10", "sku-2"], vectors, encoder=None, index_seconds=0.0, from_cache=True)
    assert top_k(query, vectors, 4, tie_order=index.id_rank).tolist() == [[2, 3, 0, 1]]  # sku-10 < sku-2 < sku-9
