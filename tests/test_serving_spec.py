"""One run, one truth (issue 17): a run's matching settings reach every consumer.

A run with `k_max` 5 whose item keyword file holds 10 keywords per item (as a teacher
may write them) is synced with `sync --run` and served with `cogr-search serve`; for
every query, the set the cluster retrieves with the service's keywords equals the set
the shadow index (built with the run's k_max, as training builds it) retrieves. With
the default k_max of 30 anywhere on that path the documents would keep all ten
keywords and the cluster would retrieve more.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.query import keyword_query
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.keywords import representation
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.serve.client import CogrSearch
from cogr_search.shadow.index import ItemIndex
from tests.serve_support import ServiceProcess, http, make_base_run

pytestmark = [pytest.mark.opensearch, pytest.mark.model]

K_MAX = 5
N_QUERIES = 40


def _teacher_keywords(title: str, description: str) -> list[str]:
    """Ten keywords per item from its own words, so that cutting at 5 or 30 differs."""
    words = list(dict.fromkeys((title + " " + description).lower().replace(",", " ").split()))
    return (words + ["home", "decor", "living", "room", "house", "modern", "classic", "style", "gift", "sale"])[:10]


@pytest.mark.slow
def test_the_served_index_and_queries_equal_the_shadow_index_of_the_run(
        tmp_path: Path, opensearch_cluster: Cluster, opensearch_url: str, index_name: str) -> None:
    dataset = load_dataset(sample_catalog_path())
    run = make_base_run(tmp_path / "runs", "spec5", k_max=K_MAX)
    items = {i.id: _teacher_keywords(i.title, i.description) for i in dataset.items.values()}
    write_keyword_file(run.item_keywords_path(0), items.items())
    assert run.serving_spec().k_max == K_MAX and max(len(k) for k in items.values()) > K_MAX

    ingest_items(opensearch_cluster, index_name, dataset.items.values(), progress=False)
    synced = CliRunner().invoke(cli, ["sync", "--index", index_name, "--run", "spec5", "--runs-dir",
                                      str(tmp_path / "runs"), "--opensearch-url", opensearch_url, "--json"])
    assert synced.exit_code == 0, synced.output
    assert json.loads(synced.stdout)["k_max"] == K_MAX
    refused = CliRunner().invoke(cli, ["sync", "--index", index_name, "--run", "spec5", "--k-max", "30",
                                       "--runs-dir", str(tmp_path / "runs"), "--opensearch-url", opensearch_url])
    assert refused.exit_code != 0 and "trained with k_max 5" in refused.output

    titles = {i.id: i.title for i in dataset.items.values()}
    shadow, at_default = ItemIndex.build(items, titles, K_MAX), ItemIndex.build(items, titles, 30)
    queries = [q.text for q in list(dataset.queries.values())[:N_QUERIES]]
    with ServiceProcess(run) as service:
        status, health = http("GET", service.url + "/health")
        assert status == 200 and health["k_max"] == K_MAX and health["spec"]["k_max"] == K_MAX
        search = CogrSearch.from_service(opensearch_cluster.client, service.url, index=index_name)
        assert search.k_max == K_MAX
        expanded = search.expand_many(queries)
    assert all(len(k) <= K_MAX for k in expanded)
    differs = 0
    for text, keywords in zip(queries, expanded):
        rep = representation(keywords, text, K_MAX)
        hits = opensearch_cluster.client.search(index=index_name, body={
            "query": keyword_query(rep), "size": 1000, "_source": False})["hits"]["hits"]
        assert {h["_id"] for h in hits} == set(shadow.retrieved(keywords, text, K_MAX)), text
        differs += set(shadow.retrieved(keywords, text, K_MAX)) != set(at_default.retrieved(keywords, text, 30))
    # the check has teeth: on these queries the default k_max would have served other sets
    assert differs > 0
