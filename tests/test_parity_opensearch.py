"""Parity of the shadow index with a real node of each engine (DESIGN.md sections 1-3).

Random keyword sets go into `cogr_keywords` exactly as sync writes them; every query is
sent as the DESIGN.md keyword query. The retrieved sets must be identical, and the BM25
scores (hence the top-10 order, up to exact ties) must agree with the shadow's Lucene
arithmetic in the engine's BM25 variant (`Cluster.engine.bm25`: legacy on OpenSearch 2.19
and Elasticsearch 8.17, Lucene's current `BM25Similarity` on OpenSearch 3.x), which `_explain`
confirms. Another test compares the standard analyzer with the shadow tokenizer on real
product titles through `_analyze`. The parity tests run on OpenSearch 2.19, OpenSearch 3.x
and Elasticsearch 8.17 (`@all_engines`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cogr_search.keywords import normalize, representation
from cogr_search.cluster.bulk import bulk_write
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import create_index
from cogr_search.cluster.query import keyword_query
from cogr_search.cluster.shadow_build import item_index_from_opensearch
from cogr_search.shadow import ItemIndex
from cogr_search.shadow.analyzer import tokenize
from cogr_search.shadow.bm25 import LEGACY_FACTOR
from tests.conftest import all_engines
from tests.requirements_check import shared_data_set

pytestmark = pytest.mark.opensearch

WORDS = (
    "white oak 2x4 3.5 in. 1/2 led bulb 40-watt stainless steel lowe's brushed nickel faucet "
    "outdoor patio chair cushion 12-gauge angle bracket deck paint gal. #10 screws 1,000 sq. ft. "
    "vinyl plank flooring bath vanity top cabinet pull door knob U.S.A"
).split()


def _phrase(rng: random.Random, max_words: int = 3) -> str:
    return " ".join(rng.sample(WORDS, rng.randint(1, max_words)))


def _catalog(seed: int, n_items: int = 150, n_queries: int = 60) -> tuple[dict, dict, dict, dict]:
    rng = random.Random(seed)
    titles = {f"item-{n:03d}": " ".join(rng.sample(WORDS, rng.randint(2, 8))).title() for n in range(n_items)}
    item_keywords = {item_id: [_phrase(rng) for _ in range(rng.randint(0, 12))] for item_id in titles}
    query_texts = {f"q{n}": _phrase(rng, 4) for n in range(n_queries)}
    query_keywords = {query_id: [_phrase(rng) for _ in range(rng.randint(0, 6))] for query_id in query_texts}
    return titles, item_keywords, query_texts, query_keywords


def _index_catalog(cluster: Cluster, alias: str, titles: dict, item_keywords: dict) -> None:
    """Documents as sync writes them: `cogr_keywords` = S_i[:k_max] ∪ {normalize(title)}."""
    create_index(cluster, alias)
    actions = (
        {
            "_index": alias,
            "_id": item_id,
            "_source": {
                "id": item_id,
                "title": title,
                "description": "",
                "cogr_keywords": representation(item_keywords[item_id], title),
            },
        }
        for item_id, title in titles.items()
    )
    assert not bulk_write(cluster, actions, chunk_size=1000).failures
    cluster.call(cluster.client.indices.refresh, index=alias)


def _search(cluster: Cluster, alias: str, reps: dict[str, list[str]]) -> dict[str, list[tuple[str, float]]]:
    body: list[dict] = []
    for rep in reps.values():
        body += [{"index": alias}, {"query": keyword_query(rep), "size": 1000, "track_total_hits": True}]
    responses = cluster.call(cluster.client.msearch, body=body)["responses"]
    out = {}
    for query_id, response in zip(reps, responses):
        assert "error" not in response, response
        hits = response["hits"]["hits"]
        assert response["hits"]["total"]["value"] == len(hits)
        out[query_id] = [(hit["_id"], hit["_score"]) for hit in hits]
    return out


def _assert_same_ranking(query_id: str, expected: list[tuple[str, float]], got: list[tuple[str, float]]) -> None:
    """Same scores rank by rank (float32 tolerance); same ids wherever a score is not tied."""
    assert len(expected) == len(got), query_id
    for rank, ((e_id, e_score), (g_id, g_score)) in enumerate(zip(expected, got)):
        assert g_score == pytest.approx(e_score, rel=1e-5, abs=1e-6), (query_id, rank, e_id, g_id)
    tied = {
        i
        for i in range(len(expected))
        for j in range(len(expected))
        if i != j and expected[j][1] == pytest.approx(expected[i][1], rel=1e-5, abs=1e-6)
    }
    for rank, ((e_id, _), (g_id, _)) in enumerate(zip(expected, got)):
        if rank not in tied:
            assert e_id == g_id, (query_id, rank)


@all_engines
@pytest.mark.parametrize("seed", [1, 2])
def test_retrieved_sets_and_bm25_order_match_opensearch(cluster: Cluster, index_name: str, seed: int) -> None:
    titles, item_keywords, query_texts, query_keywords = _catalog(seed)
    _index_catalog(cluster, index_name, titles, item_keywords)
    shadow = ItemIndex.build(item_keywords, titles, bm25_variant=cluster.engine.bm25)
    reps = {q: representation(query_keywords[q], text) for q, text in query_texts.items()}
    opensearch = _search(cluster, index_name, reps)

    nonempty = 0
    for query_id, rep in reps.items():
        expected_ids = {item_id for item_id, _ in opensearch[query_id]}
        assert set(shadow.retrieved(rep)) == expected_ids, query_id
        n_retrieved, ranked = shadow.search(rep, k=None)
        assert n_retrieved == len(expected_ids)
        scores = dict(ranked)
        for item_id, score in opensearch[query_id]:
            assert scores[item_id] == pytest.approx(score, rel=1e-6, abs=1e-7), (query_id, item_id)
        _assert_same_ranking(query_id, opensearch[query_id][:10], ranked[:10])
        nonempty += bool(expected_ids)
    assert nonempty >= len(reps) // 2  # the test data really exercises retrieval


def _explanation_values(node: dict, description: str) -> list[float]:
    """The values of every explanation node (at any depth) whose description is ``description``."""
    found = [float(node["value"])] if node.get("description") == description else []
    for child in node.get("details", []):
        found += _explanation_values(child, description)
    return found


@all_engines
def test_explain_shows_the_bm25_variant_the_shadow_scores_with(cluster: Cluster, index_name: str) -> None:
    """`_explain` of the keyword query: the legacy similarity carries a (1 + k1) = 2.2 factor
    in every term's "boost"; Lucene's BM25Similarity (OpenSearch 3.x) has none. The explained
    score is the shadow's in the variant `Cluster.engine.bm25` names."""
    titles, item_keywords, query_texts, query_keywords = _catalog(seed=4, n_items=40, n_queries=10)
    _index_catalog(cluster, index_name, titles, item_keywords)
    shadow = ItemIndex.build(item_keywords, titles, bm25_variant=cluster.engine.bm25)
    explained = 0
    for query_id, text in query_texts.items():
        rep = representation(query_keywords[query_id], text)
        n_retrieved, ranked = shadow.search(rep, k=1)
        if not n_retrieved:
            continue
        item_id, score = ranked[0]
        body = cluster.engine.unwrap(cluster.call(cluster.engine.request, cluster.client, "POST",
                                                  f"/{index_name}/_explain/{item_id}", body={"query": keyword_query(rep)}))
        explanation = body["explanation"]
        assert body["matched"] is True and float(explanation["value"]) == pytest.approx(score, rel=1e-5), query_id
        # A term's "boost" is its count in the match text (keywords share words) times the
        # variant's factor: 2.2 for the legacy similarity, 1 for Lucene's (shown only when > 1).
        factor = float(LEGACY_FACTOR) if cluster.engine.bm25 == "legacy" else 1.0
        boosts = _explanation_values(explanation, "boost")
        assert all(b / factor == pytest.approx(round(b / factor)) and round(b / factor) >= 1 for b in boosts), boosts
        if cluster.engine.bm25 == "legacy":
            assert boosts, "the legacy similarity always shows its boost"
        else:
            assert all(b == round(b) for b in boosts), boosts  # no 2.2 anywhere
        explained += 1
    assert explained >= 3  # the catalog really exercises scoring


def test_shadow_built_from_the_index_holds_the_stored_keywords(cluster: Cluster, index_name: str) -> None:
    titles, item_keywords, query_texts, query_keywords = _catalog(seed=3, n_items=80, n_queries=30)
    _index_catalog(cluster, index_name, titles, item_keywords)
    built = ItemIndex.build(item_keywords, titles)
    scanned = item_index_from_opensearch(cluster, index_name, batch_size=25)
    assert sorted(scanned.item_ids) == sorted(built.item_ids)
    for item_id in built.item_ids:
        assert scanned.keywords_of(item_id) == built.keywords_of(item_id)
        pos_built, pos_scanned = built.position(item_id), scanned.position(item_id)
        assert scanned.title_keyword(pos_scanned) == built.title_keyword(pos_built)
    for query_id, text in query_texts.items():
        rep = representation(query_keywords[query_id], text)
        assert set(scanned.retrieved(rep)) == set(built.retrieved(rep))


def _analyze(cluster: Cluster, text: str) -> list[str]:
    response = cluster.call(cluster.client.indices.analyze, body={"analyzer": "standard", "text": text})
    return [token["token"] for token in response["tokens"]]


@all_engines
def test_standard_analyzer_parity(cluster: Cluster) -> None:
    texts = [
        "simpson strong-tie 12-gauge angle",
        "3.5 in. x 2x4 1/2\" lowe's u.s.a 1,000 sq. ft. a:b",
        "#sc-141 tugboat 40-watt",
        "don't o'neill's boys' 12'6\"",
        "i\u0307stanbul stra\u00dfe caf\u00e9",
        "\u5ba2\u5385\u706f \u30ad\u30c3\u30c1\u30f3",
        "hot \U0001f525 deals",
    ]
    vectors = Path(__file__).parent / "vectors" / "normalize.jsonl"
    texts += [c["expected"] for c in map(json.loads, vectors.read_text(encoding="utf-8").splitlines()) if c["expected"]]
    _assert_same_tokens(cluster, texts)


@all_engines
def test_standard_analyzer_parity_on_home_depot_titles(cluster: Cluster) -> None:
    """300 real product titles, spread over the catalog: units, fractions, brands."""
    lines = (shared_data_set("homedepot") / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    _assert_same_tokens(cluster, [normalize(json.loads(line)["title"]) for line in lines[:: max(1, len(lines) // 300)]])


def _assert_same_tokens(cluster: Cluster, texts: list[str]) -> None:
    disagreements = [(text, _analyze(cluster, text), tokenize(text)) for text in texts]
    disagreements = [d for d in disagreements if d[1] != d[2]]
    assert disagreements == [], f"{len(disagreements)} of {len(texts)} texts tokenize differently"
