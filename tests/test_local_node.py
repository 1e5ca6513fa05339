"""The local launchers (OpenSearch and Elasticsearch): build, start, reuse, refuse a busy
port, status, stop.

One real node per engine is started for the whole module (each start costs seconds to
minutes of JVM time on 2 cores), one engine after the other: the `node` fixture is
parametrized by engine at module scope, so pytest runs every node test on OpenSearch,
stops it, then on Elasticsearch. The last test of each stops the node. These nodes are
the module's own, so the session's cluster nodes (tests/conftest.py) keep serving the
other modules. The cheap checks that
need no JVM (stale records, busy ports, a reused pid) come first.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogr_search import localnode as local_node
from cogr_search.localnode import build as local_node_build
from cogr_search.localnode import cleanup, stock
from cogr_search.localnode import ELASTICSEARCH, ELASTICSEARCH_9, ENGINES, OPENSEARCH, OPENSEARCH_3, EngineLine, LocalNodeError, NodeInfo
from tests.conftest import REPO_ROOT, LocalNodeHandle, free_port_pair

pytestmark = [
    pytest.mark.opensearch,
    pytest.mark.skipif(
        shutil.which("java") is None or shutil.which("mvn") is None,
        reason="the local node needs java and mvn on PATH",
    ),
]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not state.exists() or state.read_text().rsplit(")", 1)[-1].split()[0] != "Z"


# What each engine's node must answer: version prefix and the plugins it loads (OpenSearch
# lists them in _cat/plugins; the Elasticsearch launcher reports them as modules).
EXPECTED_VERSION = {OPENSEARCH.name: "2.19.", ELASTICSEARCH.name: "8.17."}


@pytest.fixture(scope="module", params=[OPENSEARCH.name, ELASTICSEARCH.name])
def node(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeInfo]:
    """A node of its own per engine (not the session's cluster nodes, which other test
    modules keep using): these tests stop it."""
    engine = ENGINES[request.param]
    home = tmp_path_factory.mktemp(f"local-node-{engine.name}")
    # Generous: on the shared 2-core machine a start competes with model training.
    info = local_node.start(home, port=free_port_pair(), heap="512m", timeout=600, engine=engine)
    try:
        yield info
    finally:
        cleanup.purge(home)  # a root caller's node data lives outside the home


# ---------------------------------------------------------------- no JVM needed


def test_plugins_dir_defaults_to_repo_and_obeys_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COGR_PLUGINS_DIR", raising=False)
    assert local_node.plugins_dir() == Path(__file__).resolve().parents[1] / "plugins"
    monkeypatch.setenv("COGR_PLUGINS_DIR", str(tmp_path))
    assert local_node.plugins_dir() == tmp_path.resolve()


@pytest.mark.parametrize("engine", [OPENSEARCH, OPENSEARCH_3, ELASTICSEARCH, ELASTICSEARCH_9], ids=lambda e: e.key)
def test_ensure_built_is_a_no_op_when_up_to_date(engine: EngineLine, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = local_node.ensure_built(engine=engine)
    assert jar == local_node.plugin_zip(engine) and jar.is_file()
    # A node needs only its plugin zip, made for its distribution's exact version.
    assert jar.name.endswith(f"-{engine.name}-{engine.version}.zip")
    mtime = jar.stat().st_mtime
    java = Path(os.path.realpath(shutil.which("java") or "java"))
    monkeypatch.setenv("PATH", str(java.parent))  # no mvn: a build would fail here
    assert local_node.ensure_built(engine=engine) == jar
    assert jar.stat().st_mtime == mtime


def test_a_clone_of_the_same_sources_takes_the_built_zip_without_maven(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone's setup copies the zip built from identical inputs (no `mvn` on PATH
    here, so a Maven run would fail), byte for byte; a changed source is not served."""
    built = local_node.ensure_built(engine=OPENSEARCH)
    clone = tmp_path / "plugins"
    shutil.copytree(local_node.plugins_dir(), clone, ignore=shutil.ignore_patterns("target*"))
    monkeypatch.setenv("COGR_PLUGINS_DIR", str(clone))
    java = Path(os.path.realpath(shutil.which("java") or "java"))
    monkeypatch.setenv("PATH", str(java.parent))  # the same java, and no mvn
    copied = local_node.ensure_built(engine=OPENSEARCH)
    assert copied == clone / "cogr-plugin" / "target" / built.name
    assert copied.read_bytes() == built.read_bytes()
    source = clone / "cogr-plugin/src/main/java/org/cogr/opensearch/CogrPlugin.java"
    source.write_text(source.read_text() + "\n// changed\n")
    with pytest.raises(LocalNodeError, match="'mvn' is not on PATH"):
        local_node.ensure_built(engine=OPENSEARCH)


def test_a_source_change_rebuilds_only_the_launchers_that_use_it(tmp_path: Path) -> None:
    # Which inputs count for which plugin zip (no Maven run): es-node's sources are not
    # OpenSearch's, cogr-plugin's are not Elasticsearch's, the parent pom is both's.
    root = local_node.plugins_dir()
    es_inputs = set(local_node_build._build_inputs(root, ELASTICSEARCH))
    os_inputs = set(local_node_build._build_inputs(root, OPENSEARCH))
    es_main = root / "es-node/src/main/java/org/cogr/elasticsearch/node/RootEndpointPlugin.java"
    plugin = root / "cogr-plugin/src/main/java/org/cogr/opensearch/CogrPlugin.java"
    assert es_main in es_inputs and es_main not in os_inputs
    assert plugin in os_inputs and plugin not in es_inputs
    assert root / "pom.xml" in es_inputs and root / "pom.xml" in os_inputs


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


@pytest.mark.parametrize("engine", [OPENSEARCH, ELASTICSEARCH], ids=lambda e: e.name)
def test_start_refuses_a_busy_port_without_starting_a_jvm(tmp_path: Path, engine: EngineLine) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(LocalNodeError, match=f"port {port} on 127.0.0.1 is already in use"):
            local_node.start(tmp_path, port=port, engine=engine)
    assert not (tmp_path / "node.json").exists()


def test_a_word_that_is_no_jvm_option_is_refused_before_a_jvm_starts(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGR_NODE_JVM_OPTIONS", "-XX:TieredStopAtLevel=1 Xmx2g")
    with pytest.raises(LocalNodeError, match="COGR_NODE_JVM_OPTIONS: 'Xmx2g' is not a JVM option"):
        local_node.start(tmp_path, port=free_port_pair())
    assert not (tmp_path / "node.json").exists()


def test_start_rejects_a_bad_heap(tmp_path: Path) -> None:
    with pytest.raises(LocalNodeError, match="heap"):
        local_node.start(tmp_path, port=free_port_pair(), heap="lots")


def test_a_start_ended_by_sigterm_stops_the_jvm_it_launched(tmp_path: Path) -> None:
    """`kill` of a `cogr-search` process while its node starts must not leave an unrecorded
    JVM on the port (it did: Python's default SIGTERM skipped the start's cleanup)."""
    import psutil

    command = [sys.executable, "-m", "cogr_search.cli", "opensearch", "start", "--home", str(tmp_path),
               "--port", str(free_port_pair()), "--timeout", "600"]
    starter = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    launcher = psutil.Process(starter.pid)
    jvms: list = []
    deadline = time.monotonic() + 300  # a cold build of the launcher counts
    while not jvms and starter.poll() is None and time.monotonic() < deadline:
        jvms = [child for child in launcher.children(recursive=True) if child.name() == "java"]
        time.sleep(0.1)  # polling for the JVM to appear, not waiting for an outcome
    assert jvms, "the start never launched a JVM"
    starter.send_signal(signal.SIGTERM)
    assert starter.wait(timeout=120) == 128 + signal.SIGTERM, starter.stderr.read().decode()
    _, alive = psutil.wait_procs(jvms, timeout=60)
    assert not alive
    assert not (tmp_path / "node.json").exists()


# ---------------------------------------------------------------- one real node


def _get(url: str) -> tuple[dict, dict]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read()), dict(resp.headers)


def test_node_is_the_engine_and_version_it_claims(node: NodeInfo) -> None:
    assert node.url == f"http://127.0.0.1:{node.port}"
    assert node.start_seconds > 0
    body, headers = _get(node.url + "/")
    assert body["version"]["number"].startswith(EXPECTED_VERSION[node.engine.name])
    assert body["cluster_name"] == "cogr-local"
    if node.engine is ELASTICSEARCH:
        # What clients (and the engine seam) tell the engines apart by.
        assert "distribution" not in body["version"]
        assert body["tagline"] == "You Know, for Search"
        assert headers.get("X-elastic-product") == "Elasticsearch"
        assert body["version"]["lucene_version"] and body["cluster_uuid"] not in ("", "_na_")
    else:
        assert body["version"]["distribution"] == "opensearch"
    record = json.loads((node.home / "node.json").read_text())
    assert record["pid"] == node.pid and record["url"] == node.url and "started_at" in record
    assert record["engine"] == node.engine.name


def test_the_node_runs_with_the_jvm_options_of_cogr_node_jvm_options(node: NodeInfo) -> None:
    # conftest sets -XX:TieredStopAtLevel=1 for every test node (half the start-up CPU)
    import psutil

    options = os.environ["COGR_NODE_JVM_OPTIONS"].split()
    launched = psutil.Process(node.pid)  # Elasticsearch's is its CLI, whose child is the server JVM
    server = max([launched, *launched.children(recursive=True)], key=lambda proc: len(proc.cmdline()))
    assert options and set(options) <= set(server.cmdline())


def _send(method: str, url: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        return json.loads(resp.read())


# Engine-specific tests take only their engine's node (indirect parametrization of the
# module's `node` fixture), so no test is skipped.
only_elasticsearch = pytest.mark.parametrize("node", [ELASTICSEARCH.name], indirect=True)
only_opensearch = pytest.mark.parametrize("node", [OPENSEARCH.name], indirect=True)


@only_elasticsearch
def test_elasticsearch_node_accepts_the_item_index_body(node: NodeInfo) -> None:
    # Without analysis-common the server's built-ins must cover the packaged index body:
    # the standard analyzer, and the lowercase filter a custom analyzer would use.
    tokens = _send("POST", node.url + "/_analyze", {"tokenizer": "standard", "filter": ["lowercase"], "text": "Red CHAIR"})
    assert [t["token"] for t in tokens["tokens"]] == ["red", "chair"]
    mapping = REPO_ROOT / "mappings" / "index" / "cogr-items.json"
    body = {k: v for k, v in json.loads(mapping.read_text()).items() if not k.startswith("_")}
    index = node.url + "/t-local-node-items"
    assert _send("PUT", index, body)["acknowledged"] is True
    try:
        _send("PUT", index + "/_doc/1?refresh=true", {"id": "1", "title": "Red Chair", "cogr_keywords": ["red chair"]})
        query = {
            "bool": {
                "filter": {"terms": {"cogr_keywords": ["red chair", "lamp"]}},
                "should": {"match": {"cogr_keywords.text": "red chair lamp"}},
            }
        }
        hits = _send("POST", index + "/_search", {"query": query})["hits"]["hits"]
        assert [h["_id"] for h in hits] == ["1"] and hits[0]["_score"] > 0
    finally:
        _send("DELETE", index)


@only_elasticsearch
def test_elasticsearch_node_reports_its_modules(node: NodeInfo) -> None:
    """The stock zip's modules, and the root endpoint installed from its zip (GET / answers)."""
    body, _ = _get(node.url + "/_nodes/plugins")
    (info,) = body["nodes"].values()
    assert {m["name"] for m in info["modules"]} >= {"transport-netty4", "x-pack-core", "x-pack-security"}
    assert [(p["name"], p["classname"]) for p in info["plugins"]] == [
        ("cogr-root-endpoint", "org.cogr.elasticsearch.node.RootEndpointPlugin")]


@only_opensearch
def test_opensearch_node_loads_the_modules_and_the_cogr_plugin(node: NodeInfo) -> None:
    """The stock distribution with the modules the official tarball ships (2.19's assembled
    from Maven jars), the cogr plugin installed from its zip, and the security manager on."""
    body, _ = _get(node.url + "/_nodes/plugins,jvm")
    (info,) = body["nodes"].values()
    assert {m["name"] for m in info["modules"]} >= {
        "transport-netty4", "analysis-common", "ingest-common", "search-pipeline-common",
        "lang-painless", "mapper-extras", "reindex",
    }
    assert [(p["name"], p["classname"]) for p in info["plugins"]] == [("cogr-search", "org.cogr.opensearch.CogrPlugin")]
    # 2.x installs the Java security manager at bootstrap; the JDK says so on stderr.
    out = (stock.runtime_dir(node.home) / "logs" / "node.out").read_text()
    assert "setSecurityManager has been called by org.opensearch.bootstrap.Security" in out


def test_second_start_on_the_same_home_is_idempotent(node: NodeInfo) -> None:
    again = local_node.start(node.home, port=node.port, engine=node.engine)
    assert again.pid == node.pid
    assert again.url == node.url
    assert again.engine is node.engine


def test_the_other_engine_on_the_same_home_is_refused(node: NodeInfo) -> None:
    other = OPENSEARCH if node.engine is ELASTICSEARCH else ELASTICSEARCH
    with pytest.raises(LocalNodeError, match=f"holds a running {node.engine.description} node"):
        local_node.start(node.home, port=free_port_pair(), engine=other)
    assert local_node.status(node.home).pid == node.pid


def test_another_home_on_the_busy_port_is_refused(node: NodeInfo, tmp_path: Path) -> None:
    with pytest.raises(LocalNodeError, match=f"port {node.port}"):
        local_node.start(tmp_path, port=node.port, engine=node.engine)
    assert not (tmp_path / "node.json").exists()


def test_status_reports_running(node: NodeInfo) -> None:
    state = local_node.status(node.home)
    assert state.running is True
    assert state.pid == node.pid
    assert state.url == node.url
    assert state.engine is node.engine
    assert state.version is not None and state.version.startswith(EXPECTED_VERSION[node.engine.name])


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


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cogr_search.cli", *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_cli_start_and_status_find_the_running_node(node: NodeInfo) -> None:
    # `cogr-search <engine> start` on a home whose node runs: the same node, its URL printed.
    started = _cli(node.engine.name, "start", "--home", str(node.home), "--port", str(node.port))
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == node.url
    state = _cli(node.engine.name, "status", "--home", str(node.home))
    assert state.returncode == 0, state.stderr
    version = EXPECTED_VERSION[node.engine.name]
    assert state.stdout.startswith(f"running: {node.url} (pid {node.pid}, {node.engine.label} {version}")


def test_stop_ends_the_process(node: NodeInfo) -> None:
    """Elasticsearch's script runs a CLI JVM whose child is the server JVM: both must end."""
    import psutil

    children = psutil.Process(node.pid).children(recursive=True)
    if node.engine.name == ELASTICSEARCH.name:
        # The server runs as a module: `-m org.elasticsearch.server/org.elasticsearch.bootstrap.Elasticsearch`.
        assert any(arg.endswith("/org.elasticsearch.bootstrap.Elasticsearch") for c in children for arg in c.cmdline())
    assert local_node.stop(node.home) is True
    assert not _pid_alive(node.pid)
    assert not [c.pid for c in children if _pid_alive(c.pid)]
    assert not (node.home / "node.json").exists()
    assert local_node.status(node.home).running is False
    assert local_node.stop(node.home) is False


def test_es_url_is_a_live_elasticsearch_whatever_the_tests_before_did(es_url: str, es_node_handle: LocalNodeHandle) -> None:
    # The session fixture other test files use: started on first use, and started again
    # (same home, same URL) after the launcher tests above stopped it.
    body, headers = _get(es_url + "/")
    assert body["version"]["number"].startswith(EXPECTED_VERSION[ELASTICSEARCH.name])
    assert headers.get("X-elastic-product") == "Elasticsearch"
    if es_node_handle.local:
        state = local_node.status(es_node_handle.home)
        assert state.running and state.url == es_url and state.engine is ELASTICSEARCH


def test_a_build_that_cannot_be_cached_is_kept_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The build cache only saves later clones a Maven run: where it cannot be written,
    the zip just built stays usable and one line says why it was not kept."""
    jar = tmp_path / "target" / "cogr-search-plugin.zip"
    jar.parent.mkdir()
    jar.write_bytes(b"zip bytes")
    blocked = tmp_path / "plugin-builds"
    blocked.write_text("a file where the cache's folder belongs")
    local_node_build._keep(jar, blocked / "digest-cogr-search-plugin.zip")
    assert jar.read_bytes() == b"zip bytes"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not keep it in" in err[0] and str(blocked) in err[0]
    kept = tmp_path / "cache"
    local_node_build._keep(jar, kept / "digest-cogr-search-plugin.zip")
    assert (kept / "digest-cogr-search-plugin.zip").read_bytes() == b"zip bytes"
    assert not list(kept.glob(".*partial"))
