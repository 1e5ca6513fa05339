"""Text to a sparse tf-idf vector: word 1-2-grams and character 3-5-grams of each word.

Why not scikit-learn's `TfidfVectorizer`: a probe measured its per-call overhead at
1.5 ms of a 3.4 ms query expansion (validation, sparse-matrix construction, two
vectorizers stacked), and the serving host should not need scikit-learn at all. This
featurizer is a dictionary lookup per n-gram over the run's normal form
(`keywords.normalize`), tens of microseconds for a query, and its whole state is a list
of n-grams and their idf weights, which saves to JSON exactly (floats round-trip).

Weights follow scikit-learn's defaults (smooth idf, sublinear tf off): w = tf * idf,
idf = ln((1 + n) / (1 + df)) + 1, then L2-normalised over the row.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from cogr_search.keywords import normalize

_WORD = re.compile(r"\w+")
CHAR_NGRAMS = (3, 4, 5)
FORMAT = 1
WORD_CACHE = 200_000
"""Words whose feature indices `Featurizer.vector` keeps (cleared when full)."""


def words_of(text: str) -> list[str]:
    return _WORD.findall(normalize(text))


def word_ngrams(word: str) -> list[str]:
    """A word's own n-grams: the word (`w `) and its character n-grams (`c `, the word
    padded with a space on each side, so prefixes and suffixes are features, as
    scikit-learn's `char_wb` does)."""
    padded = f" {word} "
    size = len(padded)
    out = [f"w {word}"]
    for n in CHAR_NGRAMS:
        if n > size:
            break
        out.extend("c " + padded[i : i + n] for i in range(size - n + 1))
    return out


def ngrams(text: str) -> list[str]:
    """The n-grams of one text, with repeats (their count is the tf): each word's own
    (`word_ngrams`) and the word pairs (`w a b`)."""
    words = words_of(text)
    out = [gram for word in words for gram in word_ngrams(word)]
    out.extend(f"w {a} {b}" for a, b in zip(words, words[1:]))
    return out


class Featurizer:
    """A fitted n-gram vocabulary with idf weights; `vector` featurizes one text."""

    def __init__(self, vocabulary: Sequence[str], idf: Sequence[float]) -> None:
        if len(vocabulary) != len(idf):
            raise ValueError(f"featurizer: {len(vocabulary)} n-grams but {len(idf)} idf weights")
        self.ngram_list = list(vocabulary)
        self.index = {gram: i for i, gram in enumerate(self.ngram_list)}
        self.idf = [float(x) for x in idf]
        # a word's known feature indices, computed once: catalog titles and queries repeat
        # the same words, and a word's character n-grams are most of a text's features
        self._word_features: dict[str, list[int]] = {}

    @property
    def size(self) -> int:
        return len(self.ngram_list)

    @classmethod
    def fit(cls, texts: Iterable[str], min_df: int = 1, max_features: int = 500_000) -> Featurizer:
        """The n-grams of `texts` seen in at least `min_df` of them (the `max_features`
        most frequent, ties by n-gram), in sorted order so the result is repeatable."""
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            df.update(set(ngrams(text)))
            n += 1
        kept = [(count, gram) for gram, count in df.items() if count >= min_df]
        if len(kept) > max_features:
            kept = sorted(kept, key=lambda cg: (-cg[0], cg[1]))[:max_features]
        kept.sort(key=lambda cg: cg[1])
        return cls([g for _, g in kept], [math.log((1 + n) / (1 + c)) + 1.0 for c, _ in kept])

    def vector(self, text: str) -> list[tuple[int, float]]:
        """(feature index, weight) pairs sorted by index, L2-normalised; unknown n-grams
        are dropped (an all-unknown text gives [])."""
        index, idf, cache = self.index, self.idf, self._word_features
        counts: dict[int, int] = {}
        words = words_of(text)
        for word in words:
            known = cache.get(word)
            if known is None:
                if len(cache) >= WORD_CACHE:
                    cache.clear()
                known = cache[word] = [i for i in map(index.get, word_ngrams(word)) if i is not None]
            for i in known:
                counts[i] = counts.get(i, 0) + 1
        for a, b in zip(words, words[1:]):
            i = index.get(f"w {a} {b}")
            if i is not None:
                counts[i] = counts.get(i, 0) + 1
        if not counts:
            return []
        weighted = [(i, tf * idf[i]) for i, tf in sorted(counts.items())]
        # an explicit left-to-right sum: the plugin's Java port adds in this order, and
        # Python 3.12's sum() of floats compensates (different last bits)
        square = 0.0
        for _, w in weighted:
            square += w * w
        norm = math.sqrt(square)
        return [(i, w / norm) for i, w in weighted]

    def matrix(self, texts: Sequence[str]):  # noqa: ANN201 - scipy.sparse.csr_matrix
        """Rows of `vector` as a CSR matrix (for the batch trainers; scipy is imported here only)."""
        from scipy.sparse import csr_matrix  # heavy: scipy, off the CLI's start

        indptr = [0]
        indices: list[int] = []
        data: list[float] = []
        for text in texts:
            row = self.vector(text)
            indices.extend(i for i, _ in row)
            data.extend(w for _, w in row)
            indptr.append(len(indices))
        return csr_matrix(
            (np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int32), np.asarray(indptr, dtype=np.int64)),
            shape=(len(texts), self.size),
        )

    def to_json(self) -> dict:
        return {"format": FORMAT, "char_ngrams": list(CHAR_NGRAMS), "ngrams": self.ngram_list, "idf": self.idf}

    @classmethod
    def from_json(cls, data: dict, where: str) -> Featurizer:
        if data.get("format") != FORMAT or data.get("char_ngrams") != list(CHAR_NGRAMS):
            raise ValueError(f"{where}: featurizer format {data.get('format')!r} (expected {FORMAT})")
        return cls(data["ngrams"], data["idf"])
