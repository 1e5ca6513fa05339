"""The tests' session nodes as containers (tests/container_nodes.py): a node of
the project's 2.19 image answers with the plugin and the modules of the official tarball,
runs as the non-root user, and is gone when its block ends; a killed run's containers are
removed by the next one, while a live run's stay."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from cogr_search.containers.engine import LABEL, EngineError, _api_listens, engine, engine_command, ensure_docker_api
from cogr_search.containers.images import ensure_images, local_images, opensearch_image, with_parents
from tests.container_nodes import HOST_LABEL, NODES, PID_LABEL, ROLE, remove_orphans, running
from cogr_search.localnode import OPENSEARCH
from tests.conftest import OS2, free_port_pair

pytestmark = [pytest.mark.containers]

BASE = "localhost/cogr-base:bookworm"


@pytest.fixture(scope="module")
def images() -> None:
    ensure_images(with_parents(local_images(), [opensearch_image(OPENSEARCH)]), log=lambda _line: None)


def _ours() -> set[str]:
    out = engine("ps", "-a", "--filter", f"label={PID_LABEL}={os.getpid()}", "--format", "{{.ID}}")
    return set(out.split())


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def test_a_container_node_runs_the_plugin_on_the_stock_modules_and_is_removed(images: None) -> None:
    before = _ours()
    with running(NODES[OS2], free_port_pair()) as url:
        plugins = _get(f"{url}/_nodes/plugins?filter_path=nodes.*.plugins.name,nodes.*.modules.name,nodes.*.version")
        (node,) = plugins["nodes"].values()
        assert node["version"] == OPENSEARCH.version
        assert [p["name"] for p in node["plugins"]] == ["cogr-search"]
        assert {"analysis-common", "ingest-common", "lang-painless", "reindex", "search-pipeline-common"} <= {
            m["name"] for m in node["modules"]}
        (started,) = _ours() - before
        assert engine("exec", started, "id", "-un").strip() == "opensearch"
    assert _ours() == before


@pytest.fixture()
def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture()
def labelled(dead_pid: int) -> Iterator[dict[str, str]]:
    """Two sleeping test-node containers: one of a gone process, one of this one."""
    host = engine("info", "--format", "{{.Host.Hostname}}").strip()
    made = {}
    for owner in (dead_pid, os.getpid()):
        made[str(owner)] = engine("run", "-d", "-m", "64m", "--label", f"{LABEL}={ROLE}", "--label", f"{PID_LABEL}={owner}",
                                  "--label", f"{HOST_LABEL}={host}", BASE, "sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait").strip()[:12]
    yield made
    for cid in made.values():
        with contextlib.suppress(EngineError):  # the orphan is gone already when the test passed
            engine("rm", "-f", cid)


def test_orphans_of_a_killed_run_are_removed_and_a_live_runs_kept(images: None, labelled: dict[str, str],
                                                                  dead_pid: int) -> None:
    removed = remove_orphans()
    assert labelled[str(dead_pid)] in {cid[:12] for cid in removed}
    remaining = engine("ps", "-a", "--filter", f"label={LABEL}={ROLE}", "--format", "{{.ID}}").split()
    assert labelled[str(os.getpid())] in {cid[:12] for cid in remaining}


def _api_services(socket_url: str) -> list[psutil.Process]:
    return [proc for proc in psutil.process_iter(["cmdline"])
            if (proc.info["cmdline"] or [])[1:5] == ["system", "service", "--time=0", socket_url]]


def _podman_api() -> bool:
    try:
        return engine_command().endswith("podman")
    except EngineError:
        return False  # no engine: the file is deselected anyway


@pytest.mark.skipif(not _podman_api(),
                    reason="podman's API service: docker keeps its own daemon")
def test_a_stopped_docker_api_is_started_once_on_demand(images: None, tmp_path: Path) -> None:
    """After a reboot podman is there but its API service is not; the container nodes
    start it rather than fail with 'Connection refused' (seen in a fresh `make test`).
    On a socket of this test's own, so that the machine's service (another run's, maybe)
    stays up: the test ends the one service it started, by its pid."""
    socket_url = f"unix://{tmp_path / 'podman.sock'}"
    path = socket_url.removeprefix("unix://")
    assert not _api_listens(path) and _api_services(socket_url) == []
    pid = ensure_docker_api(socket_url)
    assert pid is not None and pid != os.getpid()
    try:
        assert ensure_docker_api(socket_url) is None  # answering now: nothing more is started
        assert _api_listens(path)
        (service,) = _api_services(socket_url)
        assert service.pid == pid
        assert service.cwd() == "/"  # not this test's folder: conmon fails once a started-from folder is gone
    finally:
        started = psutil.Process(pid)
        started.terminate()
        started.wait(timeout=20)
    assert not _api_listens(path)
