"""`bench diversity`: how many keywords of a set are paraphrases of each other.

R4T says a diversity term stops paraphrase collapse. This measures collapse in keyword
files: per set, the share of keyword pairs whose MiniLM embeddings have cosine above a
threshold (0.9: "office chair" / "office chairs"), pooled over all pairs of all sets,
and the mean Vendi score: the effective number of distinct keywords per set, before the
reward term divides it by k_max (a file carries no k_max, and a count reads plainly).
Compare the files of runs trained with and without the term, on the same ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.training.diversity import KeywordEmbeddings, near_duplicate_share, vendi_score


def measure(path: Path, embeddings: KeywordEmbeddings, threshold: float = 0.9, ids: Sequence[str] | None = None) -> dict:
    """Near-duplicate pair share, mean Vendi score and set size over one keyword file."""
    sets = read_keyword_file(path)
    chosen = [sets[i] for i in ids if i in sets] if ids is not None else list(sets.values())
    embeddings.prepare(chosen)
    close = pairs = 0
    vendi = []
    for keywords in chosen:
        if not keywords:
            continue
        matrix = embeddings.matrix(keywords)
        c, p = near_duplicate_share(matrix, threshold)
        close, pairs = close + c, pairs + p
        vendi.append(vendi_score(matrix))
    return {
        "file": str(path),
        "sets": len(chosen),
        "mean_keywords": round(float(np.mean([len(k) for k in chosen])), 2) if chosen else 0.0,
        "pairs": pairs,
        f"share_pairs_cosine_over_{threshold}": round(close / pairs, 4) if pairs else 0.0,
        "mean_vendi": round(float(np.mean(vendi)), 4) if vendi else 0.0,
    }


def run(paths: Sequence[Path], threshold: float = 0.9) -> dict:
    """Each file measured on the ids all files share, so the sets compared are the same queries."""
    shared = set.intersection(*(set(read_keyword_file(p)) for p in paths)) if paths else set()
    embeddings = KeywordEmbeddings()
    ids = sorted(shared)
    return {"threshold": threshold, "ids": len(ids), "files": [measure(p, embeddings, threshold, ids) for p in paths]}
