"""docker/compose.yaml end to end under podman: the project's images (`make images`), the
expansion service serving a real run (the tiny model), OpenSearch 2.19 with the plugin
installed from its zip, and the setup job that creates the index with both pipelines.

What an app sees: documents indexed plainly are enriched by the default ingest pipeline
(`cogr_keywords` filled), and a plain `match` with `?search_pipeline=cogr` returns the Python
API's hits in the same order, expanded, with no fallback taken.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.ingest import ingest_items
from cogr_search.containers.engine import engine
from cogr_search.containers.images import SERVE_IMAGE, ensure_images, local_images, opensearch_image, with_parents
from tests.container_nodes import HOST_LABEL, PID_LABEL, ROLE
from cogr_search.data import Item, load_dataset, sample_catalog_path
from cogr_search.generators.students.distill import open_students
from cogr_search.generators.students.model import item_text
from cogr_search.keywords import representation
from cogr_search.runs.run_dir import RunDir
from cogr_search.localnode import OPENSEARCH
from cogr_search.serve.client import CogrSearch
from tests.conftest import REPO_ROOT, connect_to, free_port
from tests.serve_support import make_base_run
from tests.student_support import make_keyword_run

pytestmark = [pytest.mark.containers, pytest.mark.slow]

COMPOSE_FILE = REPO_ROOT / "docker" / "compose.yaml"
STUDENTS_COMPOSE_FILE = REPO_ROOT / "docker" / "compose-students.yaml"
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


def _compose(compose_file: Path, project: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman-compose", "-p", project, "-f", str(compose_file), *args], env=env,
                          capture_output=True, text=True, check=False)


@contextlib.contextmanager
def _up(compose_file: Path, project: str, runs_dir: Path, run: str, **ports: int) -> Iterator[None]:
    """`podman-compose up -d` of `compose_file` on the given loopback ports; the setup job must
    exit 0. Down (volumes too) afterwards; the owner labels let a later run remove it if this
    one is killed."""
    env = {**os.environ, "COGR_RUN": run, "COGR_RUNS_DIR": str(runs_dir), "COGR_RUNS_MOUNT": str(runs_dir),
           "COGR_OPENSEARCH_HEAP": "768m", "COGR_OPENSEARCH_MEMORY": "1536m", "COGR_INDEX": ALIAS,
           "COGR_CONTAINER_ROLE": ROLE, "COGR_OWNER_PID": str(os.getpid()), "COGR_OWNER_HOST": socket.gethostname(),
           **{f"COGR_{name.upper()}_PORT": str(port) for name, port in ports.items()}}
    up = _compose(compose_file, project, env, "up", "-d")
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        setup = f"{project}_setup_1"
        code = engine("wait", setup).strip()
        assert code == "0", f"setup exited {code}: {engine('logs', setup)[-2000:]}"
        yield
    finally:
        _compose(compose_file, project, env, "down", "-v")


@pytest.fixture(scope="module")
def stack(images: None, runs_dir: Path) -> Iterator[Stack]:
    os_port, serve_port = free_port(), free_port()
    with _up(COMPOSE_FILE, f"cogr-test-{os.getpid()}", runs_dir, "compose", opensearch=os_port, serve=serve_port):
        yield Stack(f"http://127.0.0.1:{os_port}", f"http://127.0.0.1:{serve_port}")


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


# ---------------------------------------------------------------- service-free: the students

@pytest.fixture(scope="module")
def students_stack(images: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, RunDir]]:
    """docker/compose-students.yaml with a distilled run: no service container at all."""
    root = Path(tempfile.mkdtemp(prefix="cogr-compose-students-", dir="/var/tmp"))
    run = make_keyword_run(root, "students")
    distilled = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1"])
    assert distilled.exit_code == 0, distilled.output
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    port = free_port()
    try:
        with _up(STUDENTS_COMPOSE_FILE, f"cogr-test-students-{os.getpid()}", root, "students", opensearch=port):
            yield connect_to(f"http://127.0.0.1:{port}", opensearch_timeout_s=TIMEOUT_S), run
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_service_free_stack_enriches_and_expands_with_the_students(
        students_stack: tuple[Cluster, RunDir]) -> None:
    cluster, run = students_stack
    chosen = list(load_dataset(sample_catalog_path()).items.values())[:ITEMS * 4]
    report = ingest_items(cluster, ALIAS, chosen, chunk_size=8, progress=False)  # the default pipeline enriches
    assert report.failed == 0, report.failures
    cluster.call(cluster.client.indices.refresh, index=ALIAS)
    item_student = open_students(run, 0, ("item",)).sides["item"]
    for item in chosen:
        source = cluster.call(cluster.client.get, index=ALIAS, id=item.id)["_source"]
        keywords = item_student.keywords(item_text(item.title, item.description))
        assert source["cogr_keywords"] == representation(keywords, item.title, item_student.k_max), item.id
    api = CogrSearch.from_run(cluster.client, run.root, index=ALIAS)
    for item in chosen[:4]:
        response = cluster.call(cluster.client.search, index=ALIAS,
                                body={"query": {"match": {"title": item.title}}, "size": 10},
                                params={"search_pipeline": "cogr"})
        assert response["ext"]["cogr"]["expanded"] is True, response["ext"]["cogr"]
        assert [h["_id"] for h in response["hits"]["hits"]] == [h.id for h in api.search(item.title, size=10).hits]
