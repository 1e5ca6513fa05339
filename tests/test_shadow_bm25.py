"""Lucene's BM25 arithmetic and the standard-analyzer approximation, checked by hand.

SmallFloat values were printed by Lucene 9.12's own `SmallFloat` (the version inside
OpenSearch 2.19); the end-to-end check against a live node is in test_parity_opensearch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogr_search.shadow import ItemIndex
from cogr_search.shadow.analyzer import tokenize
from cogr_search.shadow.bm25 import LENGTH_TABLE, NUM_FREE_VALUES, byte4_to_int, int_to_byte4, lucene_idf

# byte -> decoded length, from org.apache.lucene.util.SmallFloat.byte4ToInt
BYTE4_TO_INT = {0: 0, 1: 1, 23: 23, 24: 24, 25: 25, 40: 40, 41: 42, 42: 44, 50: 64, 60: 120, 100: 3096,
                200: 16777240, 255: 2013265944}
# length -> encoded byte, from SmallFloat.intToByte4
INT_TO_BYTE4 = {0: 0, 1: 1, 24: 24, 30: 30, 40: 40, 47: 43, 48: 44, 50: 45, 100: 57, 500: 78, 1000: 87, 2999: 99}


def test_small_float_matches_lucene() -> None:
    assert NUM_FREE_VALUES == 24
    for byte, value in BYTE4_TO_INT.items():
        assert byte4_to_int(byte) == value
        assert LENGTH_TABLE[byte] == np.float32(value)
    for value, byte in INT_TO_BYTE4.items():
        assert int_to_byte4(value) == byte


def test_small_float_round_trip_is_monotone_and_floors() -> None:
    previous = -1
    for length in range(3000):
        decoded = byte4_to_int(int_to_byte4(length))
        assert decoded <= length  # quantization rounds down
        assert decoded >= previous
        previous = decoded
    assert byte4_to_int(int_to_byte4(40)) == 40 and byte4_to_int(int_to_byte4(41)) == 40  # first coarsened length


def test_idf_is_lucenes() -> None:
    idf = lucene_idf(np.array([1, 60]), 150)
    assert idf.dtype == np.float32
    assert idf[0] == np.float32(math.log(1 + (150 - 1 + 0.5) / 1.5))
    assert idf[1] == pytest.approx(0.9146365, rel=1e-7)  # OpenSearch's explain output


def test_bm25_score_by_hand() -> None:
    # three items, keyword bags analyzed: a = [red, shoe, red, sole], b = [blue, shoe], c = [red]
    items = ItemIndex.build({"a": ["red shoe", "red"], "b": ["blue"], "c": []}, {"a": "Sole", "b": "Shoe", "c": "Red"})
    bm25 = items.bm25
    assert bm25.doc_count == 3 and bm25.sum_total_term_freq == 7
    avgdl = 7 / 3
    n, ranked = items.search(["red"], k=None)
    assert n == 2  # "red" is a keyword of a and of c
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def score(freq: int, dl: int, boost: float = 1.0) -> float:
        return boost * 2.2 * idf * freq / (freq + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))

    expected = sorted([("a", score(2, 4)), ("c", score(1, 1))], key=lambda pair: -pair[1])
    assert [item for item, _ in ranked] == [item for item, _ in expected]
    for (_, got), (_, want) in zip(ranked, expected):
        assert got == pytest.approx(want, rel=1e-6)
    # a token repeated in the query counts twice (Lucene sums the clause boosts)
    _, twice = items.search(["red", "red shoe"], k=1)
    shoe_idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    want = score(2, 4, boost=2.0) + 2.2 * shoe_idf * 1 / (1 + 1.2 * (1 - 0.75 + 0.75 * 4 / avgdl))
    assert twice[0][0] == "a" and twice[0][1] == pytest.approx(want, rel=1e-6)


def test_lucene_variant_by_hand() -> None:
    # Elasticsearch's BM25Similarity: the same items as above, without LegacyBM25's (1 + k1)
    keywords, titles = {"a": ["red shoe", "red"], "b": ["blue"], "c": []}, {"a": "Sole", "b": "Shoe", "c": "Red"}
    items = ItemIndex.build(keywords, titles, bm25_variant="lucene")
    avgdl = 7 / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def score(freq: int, dl: int, boost: float = 1.0) -> float:
        return boost * idf * freq / (freq + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))

    n, ranked = items.search(["red"], k=None)
    # c's one "red" in a bag of 1 outscores a's two in a bag of 4 (length normalisation)
    assert n == 2 and [item for item, _ in ranked] == ["c", "a"]
    assert ranked[0][1] == pytest.approx(score(1, 1), rel=1e-6)
    assert ranked[1][1] == pytest.approx(score(2, 4), rel=1e-6)
    _, twice = items.search(["red", "red shoe"], k=1)
    want = score(2, 4, boost=2.0) + idf * 1 / (1 + 1.2 * (1 - 0.75 + 0.75 * 4 / avgdl))
    assert twice[0] == ("a", pytest.approx(want, rel=1e-6))
    # the legacy variant is the same ranking, every score 2.2 times larger
    legacy = ItemIndex.build(keywords, titles)
    _, legacy_ranked = legacy.search(["red"], k=None)
    assert [i for i, _ in legacy_ranked] == [i for i, _ in ranked]
    for (_, old), (_, new) in zip(legacy_ranked, ranked):
        assert old == pytest.approx(2.2 * new, rel=1e-6)


def test_lucene_variant_weight_is_boost_times_idf_in_float32() -> None:
    # one item "lamp" of length 1 among 2 documents: weight = idf, tf part = 1 / (1 + 1/(k1 * (1 - b + b * 1/avgdl)))
    items = ItemIndex.build({"x": ["lamp"], "y": ["rug"]}, {"x": "", "y": ""}, bm25_variant="lucene")
    idf = np.float32(math.log(1 + (2 - 1 + 0.5) / (1 + 0.5)))  # ln 2, rounded to float as Lucene does
    norm_inverse = np.float32(1) / (np.float32(1.2) * (np.float32(0.25) + np.float32(0.75) * np.float32(1) / np.float32(1)))
    expected = np.float32(idf - idf / (np.float32(1) + np.float32(1) * norm_inverse))
    _, ranked = items.search(["lamp"], k=None)
    assert ranked == [("x", float(expected))]  # bit for bit
    assert items.bm25.variant == "lucene" and items.with_item("y", ["lamp"]).bm25_variant == "lucene"


def test_unknown_bm25_variant_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown BM25 variant 'bm42'"):
        ItemIndex.build({}, {"x": "Lamp"}, bm25_variant="bm42")  # type: ignore[arg-type]


def test_ties_break_by_catalog_order_and_unmatched_tokens_score_zero() -> None:
    items = ItemIndex.build({"x": ["lamp"], "y": ["lamp"], "z": ["+"]}, {"x": "", "y": "", "z": ""})
    _, ranked = items.search(["lamp"], k=None)
    assert [item for item, _ in ranked] == ["x", "y"]
    assert ranked[0][1] == ranked[1][1] > 0
    n, ranked = items.search(["+"], k=None)  # retrieved by the exact keyword, no token to score
    assert n == 1 and ranked == [("z", 0.0)]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("simpson strong-tie 12-gauge angle", ["simpson", "strong", "tie", "12", "gauge", "angle"]),
        ("3.5 in. 2x4 1/2\"", ["3.5", "in", "2x4", "1", "2"]),
        ("lowe's u.s.a 1,000 a:b", ["lowe's", "u.s.a", "1,000", "a:b"]),
        ("#sc-141 __x _", ["sc", "141", "__x"]),
        ("boys' 3.5in v1.2b", ["boys", "3.5in", "v1.2b"]),
        ("\u5ba2\u5385 \u30ad\u30c3\u30c1\u30f3", ["\u5ba2", "\u5385", "\u30ad\u30c3\u30c1\u30f3"]),
        ("hot \U0001f525 deals", ["hot", "\U0001f525", "deals"]),
        ("Caf\u00e9 MIXED", ["caf\u00e9", "mixed"]),
        ("", []),
    ],
)
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_long_tokens_are_split_at_255() -> None:
    assert [len(t) for t in tokenize("a" * 600)] == [255, 255, 90]
