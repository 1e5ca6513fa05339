"""docker/compose.yaml end to end under podman: the project's images (`make images`), the
expansion service serving a real run (the tiny model), OpenSearch 2.19 with the plugin
installed from its zip, and the setup job that creates the index with both pipelines.

What an app sees: documents indexed plainly are enriched by the default ingest pipeline
(`cogr_keywords` filled), and a plain `match` with `?search_pipeline=cogr` returns the Python
API's hits in the same order, expanded, with no fallback taken.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.ingest import ingest_items
from cogr_search.containers.engine import engine
from cogr_search.containers.images import SERVE_IMAGE, ensure_images, local_images, opensearch_image, with_parents
from tests.container_nodes import HOST_LABEL, PID_LABEL, ROLE
from cogr_search.data import Item, load_dataset, sample_catalog_path
from cogr_search.localnode import OPENSEARCH
from cogr_search.serve.client import CogrSearch
from tests.conftest import REPO_ROOT, connect_to, free_port
from tests.serve_support import make_base_run

pytestmark = [pytest.mark.containers]

COMPOSE_FILE = REPO_ROOT / "docker" / "compose.yaml"
ALIAS = "t-compose"
ITEMS = 8
TIMEOUT_S = 600


@dataclass(frozen=True)
class Stack:
    opensearch_url: str
    service_url: str


@pytest.fixture(scope="module")
def images() -> None:
    """The two images compose runs, built here if `make images` has not (or inputs changed)."""
    ensure_images(with_parents(local_images(), [opensearch_image(OPENSEARCH), SERVE_IMAGE]), log=lambda _line: None)


@pytest.fixture(scope="module")
def runs_dir(tiny_model: Path) -> Iterator[Path]:
    """A runs folder the service container's user can read, holding a round-0 run of a copy
    of the tiny model (a link out of the mounted folder would dangle in the container)."""
    root = Path(tempfile.mkdtemp(prefix="cogr-compose-runs-", dir="/var/tmp"))
    model = Path(shutil.copytree(tiny_model, root / "model"))
    make_base_run(root, name="compose", model=model)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _compose(project: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman-compose", "-p", project, "-f", str(COMPOSE_FILE), *args], env=env,
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def stack(images: None, runs_dir: Path) -> Iterator[Stack]:
    """`podman-compose up -d` on free loopback ports; the setup job must exit 0. Down (volumes
    too) afterwards; the owner labels let a later run remove it if this one is killed."""
    project = f"cogr-test-{os.getpid()}"
    os_port, serve_port = free_port(), free_port()
    env = {**os.environ, "COGR_RUN": "compose", "COGR_RUNS_DIR": str(runs_dir), "COGR_RUNS_MOUNT": str(runs_dir),
           "COGR_OPENSEARCH_PORT": str(os_port), "COGR_SERVE_PORT": str(serve_port), "COGR_OPENSEARCH_HEAP": "768m",
           "COGR_OPENSEARCH_MEMORY": "1536m", "COGR_INDEX": ALIAS, "COGR_CONTAINER_ROLE": ROLE,
           "COGR_OWNER_PID": str(os.getpid()), "COGR_OWNER_HOST": socket.gethostname()}
    up = _compose(project, env, "up", "-d")
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        setup = f"{project}_setup_1"
        code = engine("wait", setup).strip()
        assert code == "0", f"setup exited {code}: {engine('logs', setup)[-2000:]}"
        yield Stack(f"http://127.0.0.1:{os_port}", f"http://127.0.0.1:{serve_port}")
    finally:
        _compose(project, env, "down", "-v")


@pytest.fixture(scope="module")
def cluster(stack: Stack) -> Cluster:
    return connect_to(stack.opensearch_url, opensearch_timeout_s=TIMEOUT_S)


@pytest.fixture(scope="module")
def items(cluster: Cluster) -> list[Item]:
    """The first sample items, indexed plainly: the alias's default ingest pipeline enriches them."""
    chosen = list(load_dataset(sample_catalog_path()).items.values())[:ITEMS]
    report = ingest_items(cluster, ALIAS, chosen, chunk_size=4, progress=False)
    assert report.failed == 0, report.failures
    return chosen


def test_default_ingest_pipeline_fills_cogr_keywords(cluster: Cluster, items: list[Item]) -> None:
    for item in items:
        source = cluster.call(cluster.client.get, index=ALIAS, id=item.id)["_source"]
        assert source["cogr_keywords"], item.id
        assert source["cogr_model"] and source["cogr_round"] == 0
        assert source["title"] == item.title


def test_search_pipeline_returns_the_python_api_hits(cluster: Cluster, stack: Stack, items: list[Item]) -> None:
    api = CogrSearch.from_service(cluster.client, stack.service_url, index=ALIAS, timeout_s=TIMEOUT_S)
    compared = 0
    for item in items[:4]:
        expected = api.search(item.title, size=10)
        response = cluster.call(cluster.client.search, index=ALIAS, body={"query": {"match": {"title": item.title}}, "size": 10},
                                params={"search_pipeline": "cogr"})
        assert [h["_id"] for h in response["hits"]["hits"]] == [h.id for h in expected.hits], item.title
        assert [h["_score"] for h in response["hits"]["hits"]] == pytest.approx([h.score for h in expected.hits])
        status = response["ext"]["cogr"]
        assert status["expanded"] is True and status["fallback"] is False, status
        compared += len(expected.hits)
    assert compared >= 4  # every title finds at least its own item
