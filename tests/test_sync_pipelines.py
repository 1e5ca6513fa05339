"""A sync keeps the default ingest and search pipelines an operator set on the served
version (`index create --default-pipelines`): apps that rely on them keep working."""

from __future__ import annotations

import pytest

from cogr_search.data import Item
from cogr_search.cluster.indices import alias_target, shape_of
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import SyncConfig, sync_keywords

pytestmark = [pytest.mark.opensearch, pytest.mark.secured]  # secured: also run on secured nodes


@pytest.fixture(scope="module")
def cluster(opensearch_cluster):  # noqa: ANN001, ANN201
    """OpenSearch only: the default pipelines it carries over are the plugin's, OpenSearch-only."""
    return opensearch_cluster


def test_sync_carries_default_pipelines_to_the_new_version(cluster, index_name):
    ingest_items(cluster, index_name, [Item("p1", "Oak Table", ""), Item("p2", "Lamp", "")], progress=False)
    ingest, search = f"{index_name}-ingest", f"{index_name}-search"
    cluster.client.ingest.put_pipeline(id=ingest, body={"processors": [{"set": {"field": "x_unused", "value": 1, "if": "false"}}]})
    cluster.client.transport.perform_request(
        "PUT", f"/_search/pipeline/{search}",
        body={"request_processors": [{"filter_query": {"query": {"match_all": {}}}}]},
    )
    try:
        source = alias_target(cluster, index_name)
        cluster.client.indices.put_settings(
            index=source, body={"index": {"default_pipeline": ingest, "search.default_pipeline": search}}
        )
        result = sync_keywords(cluster, index_name, {"p1": ["oak"]}, 1, "m", SyncConfig(missing="title-only"), progress=False)
        assert result.index != source
        shape = shape_of(cluster, result.index)
        assert dict(shape.pipelines) == {"default_pipeline": ingest, "search.default_pipeline": search}
        assert shape.shards == shape_of(cluster, source).shards
        plain = sync_keywords(cluster, index_name, {"p1": ["table"]}, 2, "m", SyncConfig(missing="title-only"), progress=False)
        assert dict(shape_of(cluster, plain.index).pipelines) == dict(shape.pipelines)  # still there one sync later
    finally:
        for name in (f"{index_name}--r*",):
            cluster.client.indices.delete(index=name, ignore=[404], expand_wildcards="all")
        cluster.client.ingest.delete_pipeline(id=ingest, ignore=[404])
        cluster.client.transport.perform_request("DELETE", f"/_search/pipeline/{search}")
