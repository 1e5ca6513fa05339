"""Asking OpenSearch what the evaluation needs: ranked lists and exact full-set counts.

Everything goes through `_msearch` in batches (one HTTP round trip per batch, retried by
`Cluster.call`):
- ranked lists: ordinary searches with `size = depth` that fetch only the `id` doc
  value (no stored fields, no `_source`; `filter_path` trims the response): at depth
  1000 this doubled throughput over fetching `_id` on the Home Depot queries;
- full-set counts (DESIGN.md section 3): a `size: 0` search per query with
  `track_total_hits: true` counts the retrieved set exactly, and a `filter` aggregation
  on the ids of the query's relevant items counts the true positives in the same request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence

from cogr_search.progress import progress_bar
from cogr_search.errors import CogrError
from cogr_search.metrics import QueryResult
from cogr_search.cluster.client import Cluster, describe_error
from cogr_search.cluster.engines import API_ERRORS

DEFAULT_BATCH = 64
ID_FIELD = "id"  # the item id as a keyword doc value: fetching it skips stored fields
TIE_ORDER = [{"_score": "desc"}, {ID_FIELD: "asc"}]
"""The one ranking order of evaluation (the shadow index uses the same, see
`ItemIndex.id_order`): without it, equal scores fall back to Lucene's internal doc id,
which depends on segments, merges and deletions, and moves P@k/NDCG@k on catalogs with
many identical titles."""
DEFAULT_FIELDS = ("title", "description")
TP_AGG = "true_positives"


def _chunks(ids: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def msearch(cluster: Cluster, index: str, bodies: Sequence[dict], filter_path: Sequence[str] | None = None) -> list[dict]:
    """One `_msearch` call; a per-search error becomes a one-line CogrError."""
    lines: list[str] = []
    for body in bodies:
        lines.append("{}")
        lines.append(json.dumps(body))
    kwargs: dict[str, object] = {"index": index, "body": "\n".join(lines) + "\n"}
    if filter_path:
        kwargs["filter_path"] = ",".join(["responses.error", "responses.status", *filter_path])
    try:
        responses = cluster.call(cluster.client.msearch, **kwargs).get("responses", [])
    except API_ERRORS as err:  # the whole request refused, e.g. a malformed field boost
        raise CogrError(f"search on {index} failed: {describe_error(err)}") from err
    if len(responses) != len(bodies):
        raise CogrError(f"_msearch on {index} returned {len(responses)} responses for {len(bodies)} searches")
    for response in responses:
        if "error" in response:
            error = response["error"]
            reason = error.get("root_cause", [error])[0].get("reason", error) if isinstance(error, dict) else error
            raise CogrError(f"search on {index} failed: {str(reason)[:300]}")
    return responses


def ranked_ids(
    cluster: Cluster,
    index: str,
    queries: Mapping[str, dict],
    depth: int,
    batch_size: int = DEFAULT_BATCH,
    progress: bool = False,
    desc: str = "search",
) -> dict[str, list[str]]:
    """Top `depth` item ids for each {query id: OpenSearch query clause}."""
    ids = list(queries)
    out: dict[str, list[str]] = {}
    bar = progress_bar(len(ids), desc, "query", progress)
    try:
        for chunk in _chunks(ids, batch_size):
            bodies = [
                {
                    "query": queries[q],
                    "size": depth,
                    "sort": TIE_ORDER,
                    "stored_fields": "_none_",
                    "docvalue_fields": [ID_FIELD],
                    "track_total_hits": False,
                }
                for q in chunk
            ]
            responses = msearch(cluster, index, bodies, filter_path=[f"responses.hits.hits.fields.{ID_FIELD}"])
            for qid, response in zip(chunk, responses):
                out[qid] = [hit["fields"][ID_FIELD][0] for hit in response.get("hits", {}).get("hits", [])]
            bar.update(len(chunk))
    finally:
        bar.close()
    return out


def full_set_counts(
    cluster: Cluster,
    index: str,
    queries: Mapping[str, dict],
    relevant: Mapping[str, set[str]],
    batch_size: int = DEFAULT_BATCH,
    progress: bool = False,
) -> dict[str, tuple[int, int]]:
    """(n_retrieved, n_true_positive) per query, exact, from `size: 0` searches."""
    ids = list(queries)
    out: dict[str, tuple[int, int]] = {}
    bar = progress_bar(len(ids), "count", "query", progress)
    try:
        for chunk in _chunks(ids, batch_size):
            bodies = [
                {
                    "query": queries[q],
                    "size": 0,
                    "track_total_hits": True,
                    "aggs": {TP_AGG: {"filter": {"ids": {"values": sorted(relevant.get(q, ()))}}}},
                }
                for q in chunk
            ]
            responses = msearch(
                cluster, index, bodies, filter_path=["responses.hits.total", f"responses.aggregations.{TP_AGG}.doc_count"]
            )
            for qid, response in zip(chunk, responses):
                total = response.get("hits", {}).get("total", {})
                if total.get("relation", "eq") != "eq":
                    raise CogrError(f"search on {index}: total hits for query {qid!r} is not exact")
                out[qid] = (int(total.get("value", 0)), int(response.get("aggregations", {}).get(TP_AGG, {}).get("doc_count", 0)))
            bar.update(len(chunk))
    finally:
        bar.close()
    return out


def bm25_clause(text: str, fields: Sequence[str] = DEFAULT_FIELDS) -> dict:
    """Plain BM25: the query text matched against each field, scores summed (most_fields)."""
    return {"multi_match": {"query": text, "fields": list(fields), "type": "most_fields"}}


def bm25_ranker(
    cluster: Cluster,
    index: str,
    depth: int,
    fields: Sequence[str] = DEFAULT_FIELDS,
    batch_size: int = DEFAULT_BATCH,
    progress: bool = False,
) -> Callable[[Mapping[str, str]], dict[str, list[str]]]:
    """A ranker for `evaluation.runner.evaluate_ranked` backed by the index."""

    def rank(texts: Mapping[str, str]) -> dict[str, list[str]]:
        clauses = {qid: bm25_clause(text, fields) for qid, text in texts.items()}
        return ranked_ids(cluster, index, clauses, depth, batch_size, progress, desc="bm25")

    return rank


def keyword_retriever(
    cluster: Cluster,
    index: str,
    clauses: Mapping[str, dict],
    depth: int,
    batch_size: int = DEFAULT_BATCH,
    progress: bool = False,
) -> Callable[[Mapping[str, str], Mapping[str, set[str]]], dict[str, QueryResult]]:
    """A set retriever for `evaluate_sets`: exact counts plus the BM25 order inside the set.

    `clauses` holds each query's keyword-expanded OpenSearch query (DESIGN.md section 3).
    """

    def retrieve(texts: Mapping[str, str], relevant: Mapping[str, set[str]]) -> dict[str, QueryResult]:
        wanted = {qid: clauses[qid] for qid in texts if qid in clauses}
        counts = full_set_counts(cluster, index, wanted, relevant, batch_size, progress)
        ranked = ranked_ids(cluster, index, wanted, depth, batch_size, progress, desc="cogr")
        return {qid: QueryResult(counts[qid][0], counts[qid][1], ranked[qid]) for qid in wanted}

    return retrieve
