"""Building a shadow item index from what an OpenSearch index actually holds.

Reading `cogr_keywords` back (rather than the keyword files that were synced) makes the
shadow index a faithful copy of the served one: whatever sync wrote, truncated or
merged, is what the shadow matches on. Documents are read with the shared, retried
scan (`cluster/bulk.py`); the read order does not matter for rankings, because the shadow
breaks BM25 ties by item id, as evaluation's OpenSearch searches do (`sort: _score desc,
id asc`), whatever the segments, merges and deletions of the index.
"""

from __future__ import annotations

from cogr_search.progress import progress_bar
from cogr_search.keywords import DEFAULT_K_MAX, keyword_set, normalize
from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster.bulk import scan
from cogr_search.cluster.client import Cluster
from cogr_search.shadow.index import ItemIndex

SOURCE_FIELDS = [doc_fields.TITLE, doc_fields.KEYWORDS]


def scan_keywords(
    cluster: Cluster, index: str, batch_size: int = 2000, progress: bool = False
) -> tuple[list[str], list[list[str]], list[str]]:
    """(document ids, stored `cogr_keywords`, titles), in item id order."""
    ids: list[str] = []
    keywords: list[list[str]] = []
    titles: list[str] = []
    pages = scan(cluster, index, source=SOURCE_FIELDS, page_size=batch_size)
    with progress_bar(None, "read keywords", "doc", progress) as bar:
        for page in pages:
            for hit in page:
                source = hit.get("_source") or {}
                stored = source.get(doc_fields.KEYWORDS) or []
                ids.append(hit["_id"])
                keywords.append([stored] if isinstance(stored, str) else list(stored))
                titles.append(source.get(doc_fields.TITLE) or "")
            bar.update(len(page))
    return ids, keywords, titles


def item_index_from_opensearch(
    cluster: Cluster, index: str, k_max: int = DEFAULT_K_MAX, batch_size: int = 2000, progress: bool = False
) -> ItemIndex:
    """An `ItemIndex` holding exactly the stored keyword sets of `index` (alias or name).

    The stored sets already contain the title keyword, so they are indexed as they are
    (normalized and de-duplicated, not truncated); documents without keywords match
    nothing, as in OpenSearch. `k_max` is only recorded for the rewards computed later.
    The shadow scores with the cluster's own BM25 variant (`Cluster.engine.bm25`).
    """
    ids, keywords, titles = scan_keywords(cluster, index, batch_size, progress)
    reps = [keyword_set(stored) for stored in keywords]
    return ItemIndex.from_representations(
        ids, reps, [normalize(title) for title in titles], k_max, bm25_variant=cluster.engine.bm25
    )
