"""Building a shadow item index from what an OpenSearch index actually holds.

Reading `cogr_keywords` back (rather than the keyword files that were synced) makes the
shadow index a faithful copy of the served one: whatever sync wrote, truncated or
merged, is what the shadow matches on. Documents are read in index order (a `_doc`
scroll, the cheapest); the read order does not matter for rankings, because the shadow
breaks BM25 ties by item id, as evaluation's OpenSearch searches do (`sort: _score desc,
id asc`), whatever the segments, merges and deletions of the index.
"""

from __future__ import annotations

from opensearchpy import helpers
from tqdm import tqdm

from cogr_search.keywords import DEFAULT_K_MAX, keyword_set, normalize
from cogr_search.opensearch.client import Cluster
from cogr_search.shadow.index import ItemIndex

SOURCE_FIELDS = ["title", "cogr_keywords"]


def scan_keywords(
    cluster: Cluster, index: str, batch_size: int = 2000, progress: bool = False
) -> tuple[list[str], list[list[str]], list[str]]:
    """(document ids, stored `cogr_keywords`, titles), in index order."""
    ids: list[str] = []
    keywords: list[list[str]] = []
    titles: list[str] = []
    hits = helpers.scan(
        cluster.client,
        index=index,
        query={"query": {"match_all": {}}, "_source": SOURCE_FIELDS},
        size=batch_size,
        preserve_order=False,  # scroll sorted by _doc: index order
    )
    for hit in tqdm(hits, desc="read keywords", unit="doc", disable=not progress, leave=False):
        source = hit.get("_source") or {}
        stored = source.get("cogr_keywords") or []
        ids.append(hit["_id"])
        keywords.append([stored] if isinstance(stored, str) else list(stored))
        titles.append(source.get("title") or "")
    return ids, keywords, titles


def item_index_from_opensearch(
    cluster: Cluster, index: str, k_max: int = DEFAULT_K_MAX, batch_size: int = 2000, progress: bool = False
) -> ItemIndex:
    """An `ItemIndex` holding exactly the stored keyword sets of `index` (alias or name).

    The stored sets already contain the title keyword, so they are indexed as they are
    (normalized and de-duplicated, not truncated); documents without keywords match
    nothing, as in OpenSearch. `k_max` is only recorded for the rewards computed later.
    """
    ids, keywords, titles = scan_keywords(cluster, index, batch_size, progress)
    reps = [keyword_set(stored) for stored in keywords]
    return ItemIndex.from_representations(ids, reps, [normalize(title) for title in titles], k_max)
