"""What the two generators' keyword spaces look like (paper section 4.4, Figures 3-4).

Per phase, for each side: how many keywords a set holds, the share of unigram, bigram
and longer keywords, the vocabulary size, and how much of the query vocabulary the
items also use (a keyword only matches where both sides write it). Words are split on
whitespace after normalization, which is how keyword files already store them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def side_profile(keyword_sets: Iterable[Sequence[str]]) -> dict:
    """Length shares, vocabulary size and mean set size of one side's keyword sets."""
    sets = [list(s) for s in keyword_sets]
    counts = {"unigram": 0, "bigram": 0, "3+": 0}
    vocabulary: set[str] = set()
    for keywords in sets:
        for keyword in keywords:
            words = len(keyword.split())
            counts["unigram" if words <= 1 else "bigram" if words == 2 else "3+"] += 1
            vocabulary.add(keyword)
    total = sum(counts.values())
    return {
        "sets": len(sets),
        "keywords": total,
        "mean_set_size": round(total / len(sets), 3) if sets else 0.0,
        "vocabulary": len(vocabulary),
        **{f"share_{name}": round(n / total, 4) if total else 0.0 for name, n in counts.items()},
    }


def keyword_space(query_keywords: Mapping[str, Sequence[str]], item_keywords: Mapping[str, Sequence[str]]) -> dict:
    """Both sides' profiles and the overlap of their vocabularies."""
    query_vocab = {k for ks in query_keywords.values() for k in ks}
    item_vocab = {k for ks in item_keywords.values() for k in ks}
    shared = query_vocab & item_vocab
    return {
        "query": side_profile(query_keywords.values()),
        "item": side_profile(item_keywords.values()),
        "shared_vocabulary": len(shared),
        "query_vocabulary_in_items": round(len(shared) / len(query_vocab), 4) if query_vocab else 0.0,
    }
