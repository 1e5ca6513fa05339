"""The engine seam: detection from `GET /`, the override, and what differs per engine.

The root bodies below are the shapes OpenSearch 2.19 and Elasticsearch 8.17 answer
`GET /` with (fields trimmed); the cluster tests check detection on the real nodes.
"""

from __future__ import annotations

import pytest

from cogr_search.errors import CogrError
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.engines import ELASTICSEARCH, OPENSEARCH, describe_error, engine_from_root, is_transient
from cogr_search.settings import load_settings
from tests.conftest import all_engines, engine_name

OPENSEARCH_ROOT = {
    "name": "node-1", "cluster_name": "cogr",
    "version": {"distribution": "opensearch", "number": "2.19.2", "build_type": "tar",
                "lucene_version": "9.12.1", "minimum_wire_compatibility_version": "7.10.0"},
    "tagline": "The OpenSearch Project: https://opensearch.org/",
}
ELASTICSEARCH_ROOT = {
    "name": "node-1", "cluster_name": "cogr",
    "version": {"number": "8.17.4", "build_flavor": "default", "build_type": "tar", "lucene_version": "9.12.0"},
    "tagline": "You Know, for Search",
}


def test_detects_opensearch_and_elasticsearch_with_their_versions() -> None:
    found = engine_from_root(OPENSEARCH_ROOT, {"content-type": "application/json"})
    assert (found.name, found.version, found.bm25, found.search_pipelines) == ("opensearch", "2.19.2", "legacy", True)
    found = engine_from_root(ELASTICSEARCH_ROOT, {"X-Elastic-Product": "Elasticsearch"})
    assert (found.name, found.version, found.bm25, found.search_pipelines) == ("elasticsearch", "8.17.4", "legacy", False)
    assert engine_from_root(ELASTICSEARCH_ROOT).name == "elasticsearch"  # a proxy that drops the header


def test_bm25_variant_by_engine_and_version() -> None:
    from cogr_search.cluster.engines import bm25_variant

    # measured: OpenSearch 2.19 and Elasticsearch 8.17 both explain "2.2 boost" (LegacyBM25Similarity)
    assert bm25_variant("opensearch", "2.19.2") == bm25_variant("elasticsearch", "8.17.2") == "legacy"
    assert bm25_variant("opensearch", "3.0.0") == "lucene"  # OpenSearch 3 defaults to Lucene's BM25Similarity
    assert bm25_variant("opensearch", None) == "legacy"


def test_an_unknown_root_answer_names_the_override() -> None:
    with pytest.raises(CogrError, match="COGR_ENGINE=opensearch or COGR_ENGINE=elasticsearch"):
        engine_from_root({"version": {"number": "1.0"}, "tagline": "something else"})


def test_the_override_skips_detection() -> None:
    # port 1: nothing listens; an overridden engine needs no request to build its client
    cluster = Cluster(load_settings(opensearch_url="http://127.0.0.1:1", engine="elasticsearch"))
    assert cluster.engine is ELASTICSEARCH
    assert type(cluster.client).__module__.startswith("elasticsearch")
    assert Cluster(load_settings(opensearch_url="http://127.0.0.1:1", engine="opensearch")).engine is OPENSEARCH


def test_pipelines_are_refused_on_elasticsearch_in_one_line() -> None:
    with pytest.raises(CogrError) as err:
        ELASTICSEARCH.with_version("8.17.4").require_search_pipelines("index create --pipelines")
    message = str(err.value)
    assert "\n" not in message and "Elasticsearch 8.17.4 has no search pipelines" in message
    assert "ingest --enrich --run RUN" in message
    OPENSEARCH.require_search_pipelines("index create --pipelines")  # no error


def test_unreachable_elasticsearch_is_transient_and_described(tmp_path) -> None:
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    cluster = Cluster(load_settings(opensearch_url=url, engine="elasticsearch", opensearch_retries=0))
    with pytest.raises(Exception) as err:
        cluster.client.info()  # the client itself, outside the retry policy
    assert is_transient(err.value)
    assert describe_error(err.value).startswith("cannot reach Elasticsearch: ")


@pytest.mark.opensearch
@all_engines
def test_the_real_node_is_detected(cluster: Cluster, request: pytest.FixtureRequest) -> None:
    info = cluster.info()
    engine_id = request.node.callspec.params["cluster_url"]
    assert cluster.engine.name == engine_name(engine_id)
    assert engine_id == f"{cluster.engine.name}-{'.'.join(info['version']['number'].split('.')[:2])}"
    assert cluster.engine.version == info["version"]["number"]
    # OpenSearch 3 scores with Lucene's BM25Similarity; 2.19 and Elasticsearch 8 with the legacy one.
    assert cluster.engine.bm25 == ("lucene" if engine_id == "opensearch-3.8" else "legacy")
    assert type(cluster.client).__module__.split(".")[0] == {"opensearch": "opensearchpy",
                                                             "elasticsearch": "elasticsearch"}[cluster.engine.name]


@pytest.mark.opensearch
def test_pipeline_commands_where_the_engine_has_no_pipelines(cluster: Cluster, cluster_url: str, index_name: str,
                                                             tmp_path) -> None:
    """On Elasticsearch: one line, exit 1, nothing created; on OpenSearch the check passes."""
    from click.testing import CliRunner

    from cogr_search.cli.main import cli
    from cogr_search.data import sample_catalog_path
    from cogr_search.cluster.indices import alias_target
    from cogr_search.cluster.pipelines import require_pipelines

    if cluster.engine.search_pipelines:
        require_pipelines(cluster, "index create --pipelines")
        return
    runner = CliRunner()
    create = runner.invoke(cli, ["index", "create", "--index", index_name, "--pipelines", "--service-url",
                                 "http://127.0.0.1:1", "--cluster-url", cluster_url])
    ingest = runner.invoke(cli, ["ingest", str(sample_catalog_path()), "--index", index_name, "--enrich", "--pipeline",
                                 "--cluster-url", cluster_url])
    for result, what in ((create, "index create --pipelines"), (ingest, "ingest --enrich --pipeline")):
        lines = result.output.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1, result.output
        assert f"{what} needs OpenSearch with the cogr-search plugin" in lines[0]
    assert alias_target(cluster, index_name) is None
