"""Shared fixtures. OpenSearch in tests is always a real node:

1. `COGR_OPENSEARCH_URL` if set (an existing cluster);
2. else testcontainers' OpenSearchContainer (2.19 image) if a Docker engine answers;
3. else the project's local launcher (plugins/), started once per test session in a
   temporary home on a free port, and stopped at the end.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogr_search.opensearch.client import Cluster, connect
from cogr_search.settings import load_settings

OPENSEARCH_IMAGE = "opensearchproject/opensearch:2.19.2"


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
def cluster(opensearch_url: str) -> Cluster:
    """A connected `Cluster` (client + retry policy) to the session's real node."""
    return connect(load_settings(opensearch_url=opensearch_url), url=opensearch_url)


@pytest.fixture()
def index_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A unique alias name per test; its versions and template are deleted afterwards."""
    alias = "t-" + request.node.name.lower().replace("[", "-").replace("]", "")[:40].strip("-_")
    alias = "".join(c if c.isalnum() or c in "-_" else "-" for c in alias)
    yield alias
    url = request.getfixturevalue("opensearch_url")
    client = connect(load_settings(opensearch_url=url), url=url).client
    client.indices.delete(index=f"{alias}-r*", ignore=[404], expand_wildcards="all")
    client.indices.delete_index_template(name=f"cogr-{alias}", ignore=[404])


REPO_ROOT = Path(__file__).resolve().parents[1]
