"""Evaluating CoGR keywords: query keyword sets against the item keywords in an index.

Two backends that must agree on P, R and F1 (a test checks it):
- `opensearch`: DESIGN.md's keyword-expanded query per query, exact full-set counts by
  `size: 0` searches, ranked lists by normal searches;
- `shadow`: the item keywords are read back from the index once, an in-memory shadow
  index is built from them, and the same metrics are computed without OpenSearch in the
  loop (what training uses for rewards, so this checks training sees what users get).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from cogr_search.data import EvalSplit
from cogr_search.errors import InputError
from cogr_search.evaluation.runner import evaluate_sets
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.keywords import DEFAULT_K_MAX, representation
from cogr_search.cluster.eval import keyword_retriever
from cogr_search.cluster.query import keyword_query
from cogr_search.cluster.shadow_build import item_index_from_opensearch

BACKENDS = ("opensearch", "shadow")


def query_representations(
    query_keywords: Mapping[str, list[str]], texts: Mapping[str, str], k_max: int = DEFAULT_K_MAX
) -> dict[str, list[str]]:
    """`S_q[:k_max] ∪ {normalize(q)}` per query (a query without keywords keeps its text)."""
    return {qid: representation(query_keywords.get(qid, []), text, k_max) for qid, text in texts.items()}


def evaluate_cogr(
    cluster,
    alias: str,
    split: EvalSplit,
    query_keywords_path: Path,
    backend: str = "opensearch",
    depth: int = 1000,
    batch_size: int = 64,
    progress: bool = False,
    extra: Mapping[str, object] | None = None,
    k_max: int = DEFAULT_K_MAX,
) -> dict[str, object]:
    """Metrics of the query keyword file against the index's item keywords."""
    query_keywords = read_keyword_file(query_keywords_path)
    if not query_keywords:
        raise InputError(f"{query_keywords_path}: no keyword rows (expected one JSON object per line: {{\"id\", \"keywords\"}})")
    texts = {qid: q.text for qid, q in split.evaluate.queries.items()}
    missing = sum(1 for qid in texts if not query_keywords.get(qid))
    settings: dict[str, object] = {
        "index": alias,
        "opensearch": cluster.url,
        "backend": backend,
        "query_keywords": str(query_keywords_path),
        "queries_without_keywords": missing,
        "k_max": k_max,
        "depth": depth,
        **(extra or {}),
    }
    if backend == "shadow":
        retrieve = _shadow_retriever(cluster, alias, query_keywords, depth, k_max, progress, settings)
    else:
        retrieve = _opensearch_retriever(cluster, alias, query_keywords, texts, depth, batch_size, progress, k_max)
    return evaluate_sets("cogr", retrieve, split, depth=depth, settings=settings)


def _opensearch_retriever(cluster, alias, query_keywords, texts, depth, batch_size, progress, k_max):
    reps = query_representations(query_keywords, texts, k_max)
    clauses = {qid: keyword_query(rep) for qid, rep in reps.items()}
    return keyword_retriever(cluster, alias, clauses, depth, batch_size, progress)


def _shadow_retriever(cluster, alias, query_keywords, depth, k_max, progress, settings):
    started = time.perf_counter()
    shadow = item_index_from_opensearch(cluster, alias, k_max, progress=progress)
    settings["shadow_build_seconds"] = round(time.perf_counter() - started, 3)
    settings["shadow_items"] = len(shadow)

    def retrieve(texts, relevant):
        return shadow.query_results(query_keywords, texts, relevant, k=depth, k_max=k_max)

    return retrieve
