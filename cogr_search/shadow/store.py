"""Saving and loading a shadow index as one compact, pickle-free `.npz` file.

Training rebuilds the shadow index after every phase and evaluation may run on another
host, so the index is a file: numpy arrays for the CSR structures and counts, strings
(ids, keywords) as one UTF-8 blob plus offsets, and a JSON header with the format name,
version and settings. Loading never unpickles (`allow_pickle=False`), so a file from
elsewhere cannot run code. Derived structures (postings, bitsets) are rebuilt on load.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cogr_search.errors import InputError
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.postings import Vocabulary
from cogr_search.shadow.query_view import QueryView

FORMAT = "cogr-shadow-index"
VERSION = 1


@dataclass
class ShadowIndex:
    """Both views: `items` always, `queries` when the index was saved with one."""

    items: ItemIndex
    queries: QueryView | None = None


def _pack_strings(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    data = blob.tobytes()
    bounds = offsets.tolist()
    return [data[bounds[i] : bounds[i + 1]].decode("utf-8") for i in range(len(bounds) - 1)]


def _vocabulary(terms: list[str]) -> Vocabulary:
    vocab = Vocabulary()
    vocab.add_all(terms)
    if len(vocab.terms) != len(terms):
        raise InputError("shadow index file: duplicate keywords in a vocabulary")
    return vocab


def save_shadow(path: Path | str, items: ItemIndex, queries: QueryView | None = None) -> Path:
    """Write both views to `path` (atomically: temp file, then rename)."""
    if queries is not None and queries.item_index is not items:
        raise ValueError("the query view must be built on the item index being saved")
    path = Path(path)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "k_max": items.k_max,
        "item_dense_min_df": items.postings.dense_min_df,
        "bm25_variant": items.bm25_variant,
        "has_queries": queries is not None,
    }
    arrays: dict[str, np.ndarray] = {}
    arrays["item_ids"], arrays["item_ids_offsets"] = _pack_strings(items.item_ids)
    arrays["item_terms_text"], arrays["item_terms_offsets"] = _pack_strings(items.terms)
    arrays["item_indptr"] = items.item_indptr
    arrays["item_terms"] = items.item_terms
    arrays["title_terms"] = items.title_terms
    if queries is not None:
        header["query_k_max"] = queries.k_max
        header["query_dense_min_df"] = queries.postings.dense_min_df
        arrays["query_ids"], arrays["query_ids_offsets"] = _pack_strings(queries.query_ids)
        arrays["query_terms_text"], arrays["query_terms_offsets"] = _pack_strings(queries.postings.terms)
        for name in ("query_indptr", "query_terms", "text_terms", "rel_indptr", "rel_items", "n_rel", "n_ret", "n_tp"):
            arrays[name] = getattr(queries, name)
    arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez_compressed(out, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_shadow(path: Path | str) -> ShadowIndex:
    """Read a file written by `save_shadow`; `InputError` names the file on any problem."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError as err:
        raise InputError(f"{path}: shadow index file not found") from err
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise InputError(f"{path}: not a shadow index file ({err})") from err
    try:
        header = json.loads(arrays["header"].tobytes().decode("utf-8"))
    except (KeyError, ValueError) as err:
        raise InputError(f"{path}: missing or unreadable header") from err
    if header.get("format") != FORMAT:
        raise InputError(f"{path}: not a shadow index file (format {header.get('format')!r})")
    if header.get("version") != VERSION:
        raise InputError(f"{path}: shadow index version {header.get('version')} is not supported (expected {VERSION})")
    try:
        items = ItemIndex(
            _unpack_strings(arrays["item_ids"], arrays["item_ids_offsets"]),
            _vocabulary(_unpack_strings(arrays["item_terms_text"], arrays["item_terms_offsets"])),
            arrays["item_indptr"],
            arrays["item_terms"],
            arrays["title_terms"],
            int(header["k_max"]),
            int(header.get("item_dense_min_df", 0)),
            str(header.get("bm25_variant", "legacy")),  # files written before the variant existed: OpenSearch's
        )
        queries = None
        if header.get("has_queries"):
            queries = QueryView(
                items,
                _unpack_strings(arrays["query_ids"], arrays["query_ids_offsets"]),
                _vocabulary(_unpack_strings(arrays["query_terms_text"], arrays["query_terms_offsets"])),
                arrays["query_indptr"],
                arrays["query_terms"],
                arrays["text_terms"],
                arrays["rel_indptr"],
                arrays["rel_items"],
                arrays["n_rel"],
                int(header["query_k_max"]),
                counts=(arrays["n_ret"], arrays["n_tp"]),
                dense_min_df=int(header.get("query_dense_min_df", 0)),
            )
    except KeyError as err:
        raise InputError(f"{path}: missing array {err.args[0]!r}") from err
    except ValueError as err:  # e.g. an unknown bm25_variant in the header
        raise InputError(f"{path}: {err}") from err
    return ShadowIndex(items, queries)
