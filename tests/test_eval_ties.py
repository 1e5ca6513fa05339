"""One tie order in OpenSearch and the shadow index: `_score` desc, then item id asc.

Home Depot has many identical titles, so many items score exactly the same and the
order among them moves P@k and NDCG@k. Lucene breaks such ties by internal doc id,
which depends on the order documents were written, on segments and on deletions; the
index here is built to make that order differ from id order (ids inserted unsorted,
several segments, overwritten and re-added documents), and both backends must still
produce the same ranked lists and the same ranked metrics.
"""

from __future__ import annotations

import random

import pytest

from cogr_search.data import Dataset, Item, Query, choose_split
from cogr_search.evaluation.cogr import evaluate_cogr
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.keywords import keyword_set, normalize
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.eval import ranked_ids
from cogr_search.cluster.indices import alias_target
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.query import keyword_query
from cogr_search.cluster.shadow_build import item_index_from_opensearch
from cogr_search.cluster.sync import sync_keywords
from tests.conftest import all_engines

pytestmark = pytest.mark.opensearch

TITLES = ("oak table", "oak table lamp", "pine table", "brass lamp")
QUERIES = {"q-oak": "oak", "q-table": "table", "q-lamp": "lamp", "q-pine": "pine table"}


def _catalog(n: int = 80) -> list[Item]:
    rng = random.Random(5)
    numbers = rng.sample(range(2000), n)  # ids neither in insertion order nor numeric order
    return [Item(f"sku-{number}", TITLES[i % len(TITLES)]) for i, number in enumerate(numbers)]


def _fragment(cluster: Cluster, index: str, items: list[Item]) -> None:
    """Overwrite and re-add documents in separate refreshes: deletions, more segments."""
    client = cluster.client
    for batch in (items[:10], items[10:20]):
        for item in batch:
            doc = client.get(index=index, id=item.id)["_source"]
            client.index(index=index, id=item.id, body=doc)
        client.indices.refresh(index=index)
    last = items[20]
    doc = client.get(index=index, id=last.id)["_source"]
    client.delete(index=index, id=last.id, refresh=True)
    client.index(index=index, id=last.id, body=doc, refresh=True)


@pytest.fixture()
def tied_index(cluster: Cluster, index_name: str):
    items = _catalog()
    for start in range(0, len(items), 20):  # one refresh per call: one segment each
        ingest_items(cluster, index_name, items[start : start + 20], progress=False)
    sync_keywords(cluster, index_name, {i.id: keyword_set(i.title.split()) for i in items}, 1, "ties", progress=False)
    target = alias_target(cluster, index_name)
    _fragment(cluster, target, items[::3])
    stats = cluster.client.indices.stats(index=target)["indices"][target]["primaries"]
    segments = cluster.client.indices.segments(index=target)["indices"][target]["shards"]["0"][0]["segments"]
    assert stats["docs"]["deleted"] > 0 and len(segments) > 1, (stats["docs"], len(segments))
    assert stats["docs"]["count"] == len(items)
    return items


@all_engines
def test_ranked_lists_agree_on_ties_with_unsorted_ids_and_deletions(cluster: Cluster, index_name: str, tied_index) -> None:
    reps = {qid: keyword_set([*text.split(), text]) for qid, text in QUERIES.items()}
    on_cluster = ranked_ids(cluster, index_name, {q: keyword_query(r) for q, r in reps.items()}, depth=100)
    shadow = item_index_from_opensearch(cluster, index_name)
    lucene_order_differs = False
    for qid, rep in reps.items():
        _, hits = shadow.search(rep, k=100)
        assert on_cluster[qid] == [iid for iid, _ in hits], qid
        by_score: dict[float, list[str]] = {}
        for iid, score in hits:
            by_score.setdefault(score, []).append(iid)
        assert all(group == sorted(group) for group in by_score.values())  # ties by id ascending
        assert max(len(group) for group in by_score.values()) >= 10  # the query really has ties
        unsorted = cluster.client.search(index=index_name, body={"query": keyword_query(rep), "size": 100, "_source": False})
        lucene_order_differs |= [h["_id"] for h in unsorted["hits"]["hits"]] != on_cluster[qid]
    assert lucene_order_differs  # without the explicit tie order, the backends would disagree


@all_engines
def test_ranked_metrics_identical_on_both_backends_with_ties(cluster: Cluster, index_name: str, tied_index, tmp_path) -> None:
    items = tied_index
    rng = random.Random(9)
    labels = {}
    for qid, text in QUERIES.items():
        matching = [i.id for i in items if set(text.split()) & set(i.title.split())]
        labels[qid] = {iid: 1.0 for iid in rng.sample(matching, 7)}
    dataset = Dataset(
        {i.id: i for i in items}, {q: Query(q, t) for q, t in QUERIES.items()}, labels, 1.0, "ties", tmp_path
    )
    query_file = tmp_path / "query_keywords.jsonl"
    write_keyword_file(query_file, [(qid, [normalize(w) for w in text.split()]) for qid, text in QUERIES.items()])
    split = choose_split(dataset, "all")
    on_cluster = evaluate_cogr(cluster, index_name, split, query_file, backend="opensearch", depth=100)
    shadow = evaluate_cogr(cluster, index_name, split, query_file, backend="shadow", depth=100)
    ranked = [key for key in on_cluster if "@" in key]
    assert ranked and "NDCG@1000" not in on_cluster  # depth 100: no @1000
    for key in ["P", "R", "F1", *ranked]:
        assert on_cluster[key] == shadow[key], key
    assert 0 < on_cluster["NDCG@10"] < 1
