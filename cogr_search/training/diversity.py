"""R4T's diversity term: the Vendi score of a keyword set's embeddings.

R4T (Jiang and Li) found that a reward without a diversity term lets the policy collapse
into paraphrases of the query; its diversity is the Vendi score (Friedman and Dieng,
2023): the exponential of the Shannon entropy of the eigenvalues of K/n, with K the
cosine similarity matrix of the n embeddings. It is the effective number of distinct
elements: 1 for n identical keywords, n for n orthogonal ones. Divided by n it lies in
(0, 1], so it adds to an F1 reward on the same scale whatever the set's size.

Embeddings are the dense baseline's MiniLM (`evaluation/dense.py`), cached per keyword:
rollouts repeat the same keywords over and over, so after the first steps almost every
keyword is a cache hit and the term costs a small eigenvalue problem per rollout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cogr_search.evaluation.dense import DenseEncoder

_EIGEN_FLOOR = 1e-12
"""Eigenvalues below this are rounding noise of a rank-deficient K (0 log 0 = 0)."""


def vendi_score(embeddings: np.ndarray) -> float:
    """exp(-sum(l log l)) over the eigenvalues l of K/n, K the cosine similarity matrix.

    0 for an empty set; rows are normalised here, so any non-zero vectors will do.
    """
    n = len(embeddings)
    if n == 0:
        return 0.0
    vectors = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms > 0, norms, 1.0)
    eigen = np.linalg.eigvalsh(vectors @ vectors.T / n)
    eigen = eigen[eigen > _EIGEN_FLOOR]
    return float(np.exp(-np.sum(eigen * np.log(eigen))))


def normalized_vendi(embeddings: np.ndarray) -> float:
    """The Vendi score divided by the set size: 1/n (all alike) to 1 (all orthogonal)."""
    return vendi_score(embeddings) / len(embeddings) if len(embeddings) else 0.0


class KeywordEmbeddings:
    """MiniLM embeddings of keywords, each encoded once and kept for the run's life."""

    def __init__(self, encoder: DenseEncoder | None = None) -> None:
        self.encoder = encoder or DenseEncoder(progress=False)
        self._cache: dict[str, np.ndarray] = {}
        self.encoded = 0

    def __len__(self) -> int:
        return len(self._cache)

    def prepare(self, keyword_sets: Sequence[Sequence[str]]) -> None:
        """Encode, in one batch, every keyword of these sets not seen before."""
        missing = list(dict.fromkeys(k for keywords in keyword_sets for k in keywords if k not in self._cache))
        if missing:
            for keyword, vector in zip(missing, self.encoder.encode(missing)):
                self._cache[keyword] = vector
            self.encoded += len(missing)

    def matrix(self, keywords: Sequence[str]) -> np.ndarray:
        """One row per keyword (all must have been prepared)."""
        if not keywords:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[k] for k in keywords])

    def diversity(self, keyword_sets: Sequence[Sequence[str]]) -> list[float]:
        """Normalised Vendi score of each set (0 for an empty one)."""
        self.prepare(keyword_sets)
        return [normalized_vendi(self.matrix(keywords)) for keywords in keyword_sets]


def near_duplicate_share(vectors: np.ndarray, threshold: float = 0.9) -> tuple[int, int]:
    """(pairs with cosine > threshold, all pairs) within one set: paraphrase collapse."""
    n = len(vectors)
    if n < 2:
        return 0, 0
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    upper = np.triu_indices(n, k=1)
    return int(np.count_nonzero((unit @ unit.T)[upper] > threshold)), len(upper[0])
