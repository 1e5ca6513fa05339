"""The query generator's search-results context from the catalog index.

The same plain BM25 query as `eval --method bm25` (title and description, most_fields)
and the same tie order, so the titles a query is shown are the ones BM25 would rank
first for it. One `_msearch` per batch of queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cogr_search.runs.query_context import ContextSource, context_size
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.documents import TITLE
from cogr_search.cluster.indices import require_index
from cogr_search.cluster.eval import DEFAULT_BATCH, TIE_ORDER, bm25_clause, msearch


def bm25_titles(cluster: Cluster, index: str, k: int, batch_size: int = DEFAULT_BATCH) -> ContextSource:
    """A context source: the titles of each text's top-`k` BM25 hits in `index`."""

    def titles(texts: Sequence[str]) -> list[list[str]]:
        out: list[list[str]] = []
        for start in range(0, len(texts), batch_size):
            bodies = [
                {"query": bm25_clause(text), "size": k, "sort": TIE_ORDER, "_source": [TITLE], "track_total_hits": False}
                for text in texts[start : start + batch_size]
            ]
            for response in msearch(cluster, index, bodies, filter_path=[f"responses.hits.hits._source.{TITLE}"]):
                hits = response.get("hits", {}).get("hits", [])
                out.append([str(hit.get("_source", {}).get(TITLE, "")) for hit in hits])
        return out

    return titles


class ContextSettings(Protocol):
    """Where a run's search results come from: its config, or its serving spec."""

    query_context: str | None
    context_index: str | None


def run_context_source(run: ContextSettings, cluster: Cluster, index: str | None) -> ContextSource | None:
    """The live source a run trained with `query_context` needs for new queries;
    `index` overrides the catalog index the run recorded. `None` for runs without it."""
    k = context_size(run.query_context)
    if k is None:
        return None
    index = index or run.context_index
    if not index:
        return None
    require_index(cluster, index, "--context-index")
    return bm25_titles(cluster, index, k)
