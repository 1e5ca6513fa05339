"""The tests' session nodes as containers of the project's own images (testcontainers).

Why: "testing against containerized OpenSearch" (DESIGN.md) must run the images users would
deploy, not the local launcher's processes. ``COGR_TEST_NODES=containers`` chooses this
path in tests/conftest.py; the images come from `make images`.

Every container carries the labels ``cogr-search=test-node`` and ``cogr-search.pid=<pid of
the pytest process>``: Ryuk (testcontainers' reaper) lives on Docker Hub and is off, so a
run that was killed leaves its containers behind, and the next run removes those whose
process is gone (`remove_orphans`). A run removes its own at the end (the context manager).
"""

from __future__ import annotations

import os
import socket
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

from cogr_search.containers.engine import LABEL, EngineError, docker_api_env, engine, ensure_docker_api
from cogr_search.containers.images import ELASTICSEARCH_IMAGE, opensearch_image
from cogr_search.localnode import OPENSEARCH, OPENSEARCH_3, EngineLine
from cogr_search.settings import load_settings

ROLE = "test-node"
PID_LABEL = f"{LABEL}.pid"
HOST_LABEL = f"{LABEL}.host"
MODE_VARIABLE = "COGR_TEST_NODES"
START_TIMEOUT_S = 600


@dataclass(frozen=True)
class NodeImage:
    """What a test node of one engine line runs: image, HTTP port, environment, memory."""

    image: str
    port: int
    env: dict[str, str]
    memory: str = "1536m"


# As the local nodes (localnode/stock.py): a test machine's disk is often past the 85-90%
# watermarks, and OpenSearch 2.19 then blocks index creation on the whole cluster
# (FORBIDDEN/10, "cluster create-index blocked"), which once failed every plugin test here.
NO_DISK_WATERMARKS = {"cluster.routing.allocation.disk.threshold_enabled": "false"}


def opensearch_node(launcher: EngineLine, heap: str = "768m") -> NodeImage:
    """A single-node OpenSearch of ``launcher``'s line with the cogr plugin."""
    return NodeImage(opensearch_image(launcher), 9200, {"discovery.type": "single-node", **NO_DISK_WATERMARKS,
                                                        "OPENSEARCH_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}"})


def elasticsearch_node(heap: str = "768m") -> NodeImage:
    """A single-node Elasticsearch 8.17 of the stock distribution (security off, GET / served)."""
    return NodeImage(ELASTICSEARCH_IMAGE, 9200, {"discovery.type": "single-node", **NO_DISK_WATERMARKS,
                                                 "ES_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}"})


NODES: dict[str, NodeImage] = {"opensearch-2.19": opensearch_node(OPENSEARCH), "opensearch-3.8": opensearch_node(OPENSEARCH_3),
                               "elasticsearch-8.17": elasticsearch_node()}
"""The test ids (tests/conftest.py) whose session node can be a container."""


def containers_chosen() -> bool:
    """Whether this run's session nodes are containers (``COGR_TEST_NODES=containers``)."""
    return (load_settings().test_nodes or "").strip().lower() == "containers"


def labels() -> dict[str, str]:
    return {LABEL: ROLE, PID_LABEL: str(os.getpid()), HOST_LABEL: socket.gethostname()}


def remove_orphans() -> list[str]:
    """Remove test-node containers whose pytest process on this host is gone; their ids."""
    listing = engine("ps", "-a", "--filter", f"label={LABEL}={ROLE}", "--format",
                     f'{{{{.ID}}}} {{{{index .Labels "{PID_LABEL}"}}}} {{{{index .Labels "{HOST_LABEL}"}}}}')
    orphans = []
    for line in listing.splitlines():
        cid, pid, host = (line.split() + ["", "", ""])[:3]
        if host == socket.gethostname() and pid.isdigit() and psutil.pid_exists(int(pid)):
            continue
        orphans.append(cid)
    if orphans:
        engine("rm", "-f", *orphans)
    return orphans


@contextmanager
def running(node: NodeImage, port: int) -> Iterator[str]:
    """A started container of ``node`` answering at 127.0.0.1:``port``; removed afterwards.

    Host networking, the node bound to loopback: the plugin tests' expansion service listens
    on the host's 127.0.0.1, and the node must reach it at the URL the test gives it (a
    bridged container's 127.0.0.1 is its own). The transport port is ``port`` + 100.
    """
    ensure_docker_api()
    os.environ.update(docker_api_env())
    from testcontainers.core.container import DockerContainer

    settings = {"network.host": "127.0.0.1", "http.port": str(port), "transport.port": str(port + 100)}
    container = DockerContainer(node.image).with_kwargs(labels=labels(), mem_limit=node.memory, network_mode="host")
    for key, value in {**node.env, **settings}.items():
        container.with_env(key, value)
    with container:
        url = f"http://127.0.0.1:{port}"
        wait_ready(container, url)
        yield url


def wait_ready(container: object, url: str, timeout_s: float = START_TIMEOUT_S) -> None:
    """Poll ``url``'s cluster health until yellow; a container that exits fails at once with its last log line."""
    deadline = time.monotonic() + timeout_s
    wrapped = container.get_wrapped_container()  # type: ignore[attr-defined]
    while time.monotonic() < deadline:
        wrapped.reload()
        if wrapped.status in ("exited", "dead"):
            logs = wrapped.logs().decode(errors="replace").strip().splitlines()
            raise EngineError(f"container {wrapped.short_id} of {wrapped.image.tags} exited: {(logs or ['(no log)'])[-1]}")
        try:
            with urllib.request.urlopen(f"{url}/_cluster/health?wait_for_status=yellow&timeout=2s", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise EngineError(f"the container node at {url} was not ready within {timeout_s:g}s")
