"""R4T's diversity term: the Vendi score of a keyword set's embeddings.

R4T (Jiang and Li) found that a reward without a diversity term lets the policy collapse
into paraphrases of the query; its diversity is the Vendi score (Friedman and Dieng,
2023): the exponential of the Shannon entropy of the eigenvalues of K/n, with K the
cosine similarity matrix of the n embeddings. It is the effective number of distinct
elements: 1 for n identical keywords, n for n orthogonal ones.

Normalisation. The R4T article (../shared/papers/r4t-article.txt) says only that
diversity is "measured with the Vendi Score", weighted 0.2 beside 0.6 groundedness and
0.2 alignment; it states no normalisation. Its policy always writes ten sub-queries, so
there any division, by n or by ten, is by the same constant and cannot favour one set
size over another. Here sets vary from 1 to k_max keywords, and dividing by n would not
be that: one keyword scores n/n = 1.0, the maximum, and every added keyword that is not
orthogonal to the rest lowers the term, so it rewards shrinking sets. So the term divides
by the fixed budget k_max instead (`normalized_vendi`): the constant R4T's fixed set
size amounts to, 0 for an empty set, 1/k_max for one keyword, 1 only for k_max
orthogonal keywords, and it grows with every genuinely new keyword. Sets within the
budget stay in [0, 1] (the Vendi score never exceeds n), on F1's scale.

Embeddings are the dense baseline's MiniLM (`dense.py`), cached per keyword:
rollouts repeat the same keywords over and over, so after the first steps almost every
keyword is a cache hit and the term costs a small eigenvalue problem per rollout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cogr_search.dense import DenseEncoder

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


def normalized_vendi(embeddings: np.ndarray, k_max: int) -> float:
    """The Vendi score divided by the keyword budget k_max, not by the set's own size.

    A fixed divisor keeps the term from preferring short sets (module docstring): one
    keyword gets 1/k_max, k_max orthogonal ones 1. A set over the budget is oversized and
    earns no reward at all, so it is refused here rather than scored above 1.
    """
    if k_max < 1:
        raise ValueError(f"k_max must be at least 1, not {k_max}")
    if len(embeddings) > k_max:
        raise ValueError(f"{len(embeddings)} keywords exceed k_max {k_max}: an oversized set has no diversity score")
    return vendi_score(embeddings) / k_max


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

    def diversity(self, keyword_sets: Sequence[Sequence[str]], k_max: int) -> list[float]:
        """Vendi score / k_max of each set (0 for an empty one); see `normalized_vendi`."""
        self.prepare(keyword_sets)
        return [normalized_vendi(self.matrix(keywords), k_max) for keywords in keyword_sets]


def near_duplicate_share(vectors: np.ndarray, threshold: float = 0.9) -> tuple[int, int]:
    """(pairs with cosine > threshold, all pairs) within one set: paraphrase collapse."""
    n = len(vectors)
    if n < 2:
        return 0, 0
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    upper = np.triu_indices(n, k=1)
    return int(np.count_nonzero((unit @ unit.T)[upper] > threshold)), len(upper[0])
