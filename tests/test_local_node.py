"""The local OpenSearch launcher: build, start, reuse, refuse a busy port, status, stop.

One real node is started for the whole module (each start costs seconds of JVM time on
2 cores); the tests run in file order and the last one stops it. The cheap checks that
need no JVM (stale records, busy ports, a reused pid) come first.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogr_search.opensearch import local_node
from cogr_search.opensearch.local_node import LocalNodeError, NodeInfo

pytestmark = [
    pytest.mark.opensearch,
    pytest.mark.skipif(
        shutil.which("java") is None or shutil.which("mvn") is None,
        reason="the local node needs java and mvn on PATH",
    ),
]


def _free_port() -> int:
    """A free port whose transport neighbour (+100) is free too."""
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port + 100 <= 65535 and local_node._port_free(port + 100):
            return port
    raise RuntimeError("no free port pair found")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not state.exists() or state.read_text().rsplit(")", 1)[-1].split()[0] != "Z"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeInfo]:
    home = tmp_path_factory.mktemp("local-node")
    info = local_node.start(home, port=_free_port(), heap="512m", timeout=180)
    try:
        yield info
    finally:
        local_node.stop(home)


# ---------------------------------------------------------------- no JVM needed


def test_plugins_dir_defaults_to_repo_and_obeys_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COGR_PLUGINS_DIR", raising=False)
    assert local_node.plugins_dir() == Path(__file__).resolve().parents[1] / "plugins"
    monkeypatch.setenv("COGR_PLUGINS_DIR", str(tmp_path))
    assert local_node.plugins_dir() == tmp_path.resolve()


def test_ensure_built_is_a_no_op_when_up_to_date() -> None:
    jar = local_node.ensure_built()
    assert jar == local_node.launcher_jar() and jar.is_file()
    assert any((jar.parent / "lib").glob("cogr-plugin-*.jar"))
    mtime = jar.stat().st_mtime
    started = time.monotonic()
    assert local_node.ensure_built() == jar
    assert time.monotonic() - started < 2.0
    assert jar.stat().st_mtime == mtime


def test_empty_home_is_not_running(tmp_path: Path) -> None:
    assert local_node.status(tmp_path) == local_node.NodeStatus(False, None, None, None)
    assert local_node.stop(tmp_path) is False
    assert local_node.stop(tmp_path / "missing") is False


def test_stop_never_kills_a_process_that_reused_the_pid(tmp_path: Path) -> None:
    # A record pointing at a live process that is not the launcher (here: a sleeper).
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record = {"pid": sleeper.pid, "port": 1, "url": "http://127.0.0.1:1"}
        (tmp_path / "node.json").write_text(json.dumps(record))
        assert local_node.status(tmp_path).running is False
        assert local_node.stop(tmp_path, timeout=1) is False
        assert sleeper.poll() is None, "a foreign process was signalled"
        assert not (tmp_path / "node.json").exists(), "the stale record should be removed"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_start_refuses_a_busy_port_without_starting_a_jvm(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(LocalNodeError, match=f"port {port} on 127.0.0.1 is already in use"):
            local_node.start(tmp_path, port=port)
    assert not (tmp_path / "node.json").exists()


def test_start_rejects_a_bad_heap(tmp_path: Path) -> None:
    with pytest.raises(LocalNodeError, match="heap"):
        local_node.start(tmp_path, port=_free_port(), heap="lots")


# ---------------------------------------------------------------- one real node


def test_node_is_opensearch_2_19(node: NodeInfo) -> None:
    assert node.url == f"http://127.0.0.1:{node.port}"
    assert node.start_seconds > 0
    with urllib.request.urlopen(node.url + "/", timeout=10) as resp:
        body = json.loads(resp.read())
    assert body["version"]["number"].startswith("2.19.")
    assert body["cluster_name"] == "cogr-local"
    record = json.loads((node.home / "node.json").read_text())
    assert record["pid"] == node.pid and record["url"] == node.url and "started_at" in record


def test_node_loads_the_modules_and_the_cogr_plugin(node: NodeInfo) -> None:
    with urllib.request.urlopen(node.url + "/_cat/plugins?h=component", timeout=10) as resp:
        components = set(resp.read().decode().split())
    assert {
        "org.cogr.opensearch.CogrPlugin",
        "org.opensearch.transport.Netty4Plugin",
        "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "org.opensearch.ingest.common.IngestCommonPlugin",
        "org.opensearch.search.pipeline.common.SearchPipelineCommonModulePlugin",
        "org.opensearch.painless.PainlessPlugin",
        "org.opensearch.index.mapper.MapperExtrasPlugin",
        "org.opensearch.index.reindex.ReindexPlugin",
    } <= components


def test_second_start_on_the_same_home_is_idempotent(node: NodeInfo) -> None:
    again = local_node.start(node.home, port=node.port)
    assert again.pid == node.pid
    assert again.url == node.url


def test_another_home_on_the_busy_port_is_refused(node: NodeInfo, tmp_path: Path) -> None:
    with pytest.raises(LocalNodeError, match=f"port {node.port}"):
        local_node.start(tmp_path, port=node.port)
    assert not (tmp_path / "node.json").exists()


def test_status_reports_running(node: NodeInfo) -> None:
    state = local_node.status(node.home)
    assert state.running is True
    assert state.pid == node.pid
    assert state.url == node.url
    assert state.version is not None and state.version.startswith("2.19.")


def test_a_record_whose_start_time_differs_is_not_the_node(node: NodeInfo) -> None:
    # Same pid and command line, other start time: what a reused pid of a relaunched node
    # would look like. The node must be neither reported nor signalled.
    path = node.home / "node.json"
    original = path.read_text()
    record = json.loads(original)
    assert record["create_time"] > 0
    path.write_text(json.dumps({**record, "create_time": record["create_time"] - 3600}))
    try:
        assert local_node.status(node.home).running is False
    finally:
        path.write_text(original)
    assert local_node.status(node.home).running is True


def test_stop_ends_the_process(node: NodeInfo) -> None:
    assert local_node.stop(node.home) is True
    assert not _pid_alive(node.pid)
    assert not (node.home / "node.json").exists()
    assert local_node.status(node.home).running is False
    assert local_node.stop(node.home) is False
