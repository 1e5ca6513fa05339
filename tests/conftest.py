"""Shared fixtures. A cluster in tests is always a real node:

1. `COGR_OPENSEARCH_URL` if set (an existing cluster);
2. else testcontainers' OpenSearchContainer (2.19 image) if a Docker engine answers;
3. else the project's local launcher (plugins/), started once per test session in a
   temporary home on a free port, and stopped at the end.
Elasticsearch likewise: `COGR_ELASTICSEARCH_URL`, else the local launcher (plugins/es-node).

Cluster tests that hold for both engines ask for `cluster` / `cluster_url`, which are
parametrized over `CLUSTER_ENGINES` (each engine's session node, started on first use);
OpenSearch-only tests (the plugin's pipelines) ask for `opensearch_cluster` /
`opensearch_url`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogr_search.opensearch.client import Cluster, connect
from cogr_search.opensearch.engines import NOT_FOUND
from cogr_search.settings import load_settings

OPENSEARCH_IMAGE = "opensearchproject/opensearch:2.19.2"
CLUSTER_ENGINES = ["opensearch", "elasticsearch"]
"""Engines the `cluster` fixtures run on, each a real node."""
ELASTICSEARCH_START_TIMEOUT_S = 900  # a start takes minutes on 2 cores shared with training


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def docker_available() -> bool:
    try:
        import docker  # testcontainers' dependency

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def opensearch_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real OpenSearch for this test session."""
    if os.environ.get("COGR_OPENSEARCH_URL"):
        yield os.environ["COGR_OPENSEARCH_URL"]
        return
    if docker_available():
        from testcontainers.opensearch import OpenSearchContainer

        with OpenSearchContainer(OPENSEARCH_IMAGE) as container:
            config = container.get_config()
            yield f"http://{config['host']}:{config['port']}"
        return
    from cogr_search.opensearch import local_node

    home = tmp_path_factory.mktemp("opensearch-node")
    info = local_node.start(home, port=free_port(), heap="1g")
    try:
        yield info.url
    finally:
        local_node.stop(home)


@pytest.fixture(scope="session")
def elasticsearch_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real Elasticsearch 8.17 for this test session, started on first use:
    `COGR_ELASTICSEARCH_URL` if set, else the project's local launcher (plugins/es-node)
    in a temporary home on a free port, stopped at the end."""
    if os.environ.get("COGR_ELASTICSEARCH_URL"):
        yield os.environ["COGR_ELASTICSEARCH_URL"].rstrip("/")
        return
    from cogr_search.opensearch import local_node

    home = tmp_path_factory.mktemp("elasticsearch-node")
    info = local_node.start(home, port=free_port(), heap="512m", timeout=ELASTICSEARCH_START_TIMEOUT_S,
                            engine=local_node.ELASTICSEARCH)
    try:
        yield info.url
    finally:
        local_node.stop(home)


def connect_to(url: str, **settings: object) -> Cluster:
    """A connected `Cluster` for `url` (its engine detected from `GET /`)."""
    return connect(load_settings(opensearch_url=url, **settings), url=url)


@pytest.fixture(scope="session", params=CLUSTER_ENGINES)
def cluster_url(request: pytest.FixtureRequest) -> str:
    """The URL of a real node of each engine in turn (`opensearch_url`, `elasticsearch_url`)."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(scope="session")
def cluster(cluster_url: str) -> Cluster:
    """A connected `Cluster` (client + retry policy) to the session's real node of each engine."""
    return connect_to(cluster_url)


@pytest.fixture(scope="session")
def opensearch_cluster(opensearch_url: str) -> Cluster:
    """A connected `Cluster` to the session's OpenSearch node, for OpenSearch-only tests."""
    return connect_to(opensearch_url)


def drop_indices(cluster: Cluster, pattern: str) -> None:
    """Delete every index matching `pattern`, by name (Elasticsearch 8 refuses wildcard
    deletes by default: `action.destructive_requires_name`)."""
    try:
        names = sorted(cluster.call(cluster.client.indices.get, index=pattern, expand_wildcards="all"))
    except NOT_FOUND:
        return
    if names:
        cluster.call(cluster.client.indices.delete, index=",".join(names))


def drop_template(cluster: Cluster, name: str) -> None:
    try:
        cluster.call(cluster.client.indices.delete_index_template, name=name)
    except NOT_FOUND:
        pass


@pytest.fixture()
def index_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A unique alias name per test; its versions and template are deleted afterwards,
    on the cluster the test used (`cluster_url` where it asked for one)."""
    alias = "t-" + request.node.name.lower().replace("[", "-").replace("]", "")[:40].strip("-_")
    alias = "".join(c if c.isalnum() or c in "-_" else "-" for c in alias)
    yield alias
    fixture = "cluster_url" if "cluster_url" in request.fixturenames else "opensearch_url"
    cluster = connect_to(request.getfixturevalue(fixture), opensearch_retries=1)
    drop_indices(cluster, f"{alias}-r*")
    drop_template(cluster, f"cogr-{alias}")


REPO_ROOT = Path(__file__).resolve().parents[1]
