"""Lucene's BM25 over keyword bags, reproduced bit for bit where it matters for order.

Two variants (`opensearch.engines.bm25_variant` says which engine and version uses
which): `legacy` (OpenSearch 2.x and Elasticsearch 8, measured) and `lucene` (Lucene's
own `BM25Similarity`, OpenSearch 3's default). They differ only in the query-side factor
below, so their scores are a constant k1 + 1 apart; the arithmetic is kept exact for
both because float32 rounding of that factor can turn an exact tie into a near-tie and back.

OpenSearch ranks the keyword-expanded query by BM25 over `cogr_keywords.text` (all of
an item's keywords, analyzed by the `standard` analyzer, as one multi-valued field).
To make shadow rankings agree with it, this module copies Lucene 9's arithmetic
(`BM25Similarity`, `SmallFloat`) rather than the textbook formula:

- idf = ln(1 + (N - n + 0.5) / (n + 0.5)) in double, then rounded to float, with N the
  number of documents that have the field and n the documents containing the token;
- document length is stored in one byte (`SmallFloat.intToByte4`) and decoded back
  (`byte4ToInt`), so lengths above 24 tokens are coarsened;
- avgdl = sumTotalTermFreq / docCount in double, rounded to float;
- per token: weight - weight / (1 + freq * normInverse) in float32, with
  weight = boost * idf and normInverse = 1 / (k1 * ((1 - b) + b * dl / avgdl));
- OpenSearch's "BM25" is `LegacyBM25Similarity`, which passes boost * (1 + k1) to
  Lucene's BM25 (Lucene 8 dropped that factor; OpenSearch keeps scores comparable with
  older versions), so in the `legacy` variant the query boost is multiplied by the
  float32 2.2; the `lucene` variant (Lucene's own `BM25Similarity`) uses the boost as it is;
- a token repeated in the query becomes one clause with its boosts summed (Lucene's
  BooleanQuery rewrite deduplicates SHOULD clauses), i.e. boost = repeat count;
- clause scores are summed in double and the total rounded to float;
- ties are broken by a caller-given order, which `ItemIndex` makes item id ascending,
  the order evaluation asks OpenSearch for (`sort: [_score desc, id asc]`): Lucene's
  own tie-break, the internal doc id, changes with segments, merges and deletions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np

from cogr_search.shadow.analyzer import keyword_tokens
from cogr_search.shadow.postings import Vocabulary, csr_from_rows, gather

K1 = np.float32(1.2)
B = np.float32(0.75)
LEGACY_FACTOR = np.float32(np.float32(1.0) + K1)
"""LegacyBM25Similarity's boost factor (1 + k1), computed in float as Java does."""

Bm25Variant = Literal["legacy", "lucene"]
BOOST_FACTOR: dict[str, np.float32] = {"legacy": LEGACY_FACTOR, "lucene": np.float32(1.0)}
"""The query boost multiplier of each variant."""


def boost_factor(variant: str) -> np.float32:
    """The variant's query boost multiplier; a one-line error for an unknown name."""
    try:
        return BOOST_FACTOR[variant]
    except KeyError:
        raise ValueError(f"unknown BM25 variant {variant!r}; expected one of {sorted(BOOST_FACTOR)}") from None


def _long_to_int4(value: int) -> int:
    """4-bit float-like encoding of a non-negative int (SmallFloat.longToInt4)."""
    num_bits = value.bit_length()
    if num_bits < 4:
        return value
    shift = num_bits - 4
    encoded = (value >> shift) & 0x07
    return encoded | ((shift + 1) << 3)


def _int4_to_long(value: int) -> int:
    bits = value & 0x07
    shift = (value >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_MAX_INT4 = _long_to_int4(2**31 - 1)
NUM_FREE_VALUES = 255 - _MAX_INT4


def int_to_byte4(value: int) -> int:
    """SmallFloat.intToByte4 as an unsigned byte: exact up to 40, 4 significant bits of (n - 24) above."""
    if value < 0:
        raise ValueError("lengths are non-negative")
    if value < NUM_FREE_VALUES:
        return value
    return NUM_FREE_VALUES + _long_to_int4(value - NUM_FREE_VALUES)


def byte4_to_int(byte: int) -> int:
    """SmallFloat.byte4ToInt for an unsigned byte."""
    if byte < NUM_FREE_VALUES:
        return byte
    return NUM_FREE_VALUES + _int4_to_long(byte - NUM_FREE_VALUES)


LENGTH_TABLE = np.array([byte4_to_int(b) for b in range(256)], dtype=np.float32)


def encode_lengths(lengths: np.ndarray) -> np.ndarray:
    """Vectorized int_to_byte4 (lengths are small, so a lookup of the distinct values)."""
    distinct, inverse = np.unique(lengths, return_inverse=True)
    encoded = np.array([int_to_byte4(int(v)) for v in distinct], dtype=np.uint8)
    return encoded[inverse]


def lucene_idf(doc_freq: np.ndarray, doc_count: int) -> np.ndarray:
    df = doc_freq.astype(np.float64)
    return np.log(1.0 + (doc_count - df + 0.5) / (df + 0.5)).astype(np.float32)


def norm_inverse_cache(avgdl: np.float32) -> np.ndarray:
    """BM25Similarity's 256-entry cache of 1 / (k1 * ((1 - b) + b * dl / avgdl)), float32."""
    one = np.float32(1.0)
    return (one / (K1 * ((one - B) + B * LENGTH_TABLE / avgdl))).astype(np.float32)


class BM25Index:
    """Token statistics of every item's keyword bag, and scoring inside a candidate set."""

    def __init__(
        self, item_terms_indptr: np.ndarray, item_terms: np.ndarray, terms: Sequence[str], variant: Bm25Variant = "legacy"
    ) -> None:
        self.variant = variant
        self.boost_factor = boost_factor(variant)
        n_items = len(item_terms_indptr) - 1
        tokens = Vocabulary()
        term_tokens = [tokens.add_all(keyword_tokens(term)) for term in terms]
        self.tokens = tokens
        t_indptr, t_values = csr_from_rows(term_tokens)
        # tokens of every item: the concatenation of its keywords' tokens
        term_owner = np.repeat(np.arange(n_items, dtype=np.int64), np.diff(item_terms_indptr))
        token_ids, owner = gather(t_indptr, t_values, item_terms)
        item_of_token = term_owner[owner]
        n_tokens = max(len(tokens.terms), 1)
        codes, tf = np.unique(item_of_token * n_tokens + token_ids, return_counts=True)
        items, toks = np.divmod(codes, n_tokens)
        lengths = np.bincount(item_of_token, minlength=n_items)
        self.doc_count = int(np.count_nonzero(lengths))
        self.sum_total_term_freq = int(lengths.sum())
        avgdl = np.float32(self.sum_total_term_freq / self.doc_count) if self.doc_count else np.float32(1.0)
        self.avgdl = avgdl
        self.norms = encode_lengths(lengths)
        self.norm_inverse = norm_inverse_cache(avgdl)
        # token -> (item, tf), items ascending
        order = np.lexsort((items, toks))
        self.post_items = items[order].astype(np.int32)
        self.post_tf = tf[order].astype(np.float32)
        counts = np.bincount(toks, minlength=len(tokens.terms))
        self.post_indptr = np.zeros(len(tokens.terms) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.post_indptr[1:])
        self.idf = lucene_idf(counts, self.doc_count)

    def query_boosts(self, keywords: Sequence[str]) -> dict[int, float]:
        """Token id -> boost (repeat count) for the match query over " ".join(keywords)."""
        counts: Counter[int] = Counter()
        ids = self.tokens.ids
        for keyword in keywords:
            for token in keyword_tokens(keyword):
                term = ids.get(token)
                if term is not None:
                    counts[term] += 1
        return dict(counts)

    def scores(self, keywords: Sequence[str], candidates: np.ndarray) -> np.ndarray:
        """float32 BM25 score of each candidate item position (0 where no token matches)."""
        n_items = len(self.norms)
        slot = np.full(n_items, -1, dtype=np.int64)
        slot[candidates] = np.arange(len(candidates))
        total = np.zeros(len(candidates), dtype=np.float64)
        one = np.float32(1.0)
        for token, boost in self.query_boosts(keywords).items():
            lo, hi = self.post_indptr[token], self.post_indptr[token + 1]
            items = self.post_items[lo:hi]
            where = slot[items]
            hit = where >= 0
            if not hit.any():
                continue
            # legacy: (boost * (1 + k1)) * idf; lucene: (boost * 1) * idf, exactly boost * idf
            weight = np.float32(np.float32(np.float32(boost) * self.boost_factor) * self.idf[token])
            tf = self.post_tf[lo:hi][hit]
            norm_inv = self.norm_inverse[self.norms[items[hit]]]
            partial = weight - weight / (one + tf * norm_inv)
            total[where[hit]] += partial.astype(np.float64)
        return total.astype(np.float32)

    def rank(
        self,
        keywords: Sequence[str],
        candidates: np.ndarray,
        k: int | None = None,
        tie_order: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Candidates ordered by score descending, ties by `tie_order[position]`
        (default: by position); (positions, scores)."""
        candidates = np.asarray(candidates, dtype=np.int64)
        scores = self.scores(keywords, candidates)
        ties = candidates if tie_order is None else tie_order[candidates]
        order = np.lexsort((ties, -scores))
        if k is not None:
            order = order[:k]
        return candidates[order], scores[order]

    def memory_bytes(self) -> int:
        arrays = (self.post_items, self.post_tf, self.post_indptr, self.idf, self.norms)
        return sum(a.nbytes for a in arrays)
