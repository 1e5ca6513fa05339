"""A three-node OpenSearch cluster on loopback (`opensearch start --nodes 3`), and a sync on it
with replicas while an application writes and one data node is SIGKILLed mid-copy.

The cluster is the module's own, started by the CLI as a user would, stopped at the end.
What must hold while a node dies under a sync: the sync completes (or a rerun resumes it),
nothing the application wrote is lost, the alias only ever points at the old version or the
complete new one, and searches through the alias keep answering (yellow is allowed).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target, versions, write_blocked
from cogr_search.bench.node import free_port_run
from cogr_search.localnode import multinode, process
from tests.conftest import REPO_ROOT, connect_to
from tests.test_sync_online import ENV, Writer, _assert_content, _catalog

pytestmark = [pytest.mark.opensearch, pytest.mark.slow]

NODES = 3
DEADLINE_S = 300
POLL_S = 0.05


def _cli(*args: str, timeout: float = DEADLINE_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogr_search.cli", *args], cwd=REPO_ROOT, env=ENV,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    home = tmp_path_factory.mktemp("three-nodes")
    port = free_port_run(NODES)
    started = _cli("opensearch", "start", "--nodes", str(NODES), "--home", str(home), "--port", str(port),
                   "--heap", "384m")
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.strip() == f"http://127.0.0.1:{port}"
        yield home, started.stdout.strip()
    finally:
        stopped = _cli("opensearch", "stop", "--home", str(home), "--purge")
        assert stopped.stdout.strip() == "stopped", stopped.stderr


def test_status_lists_every_node_and_the_cluster_health(three_nodes: tuple[Path, str]) -> None:
    home, url = three_nodes
    state = _cli("opensearch", "status", "--home", str(home), timeout=60)
    assert state.returncode == 0, state.stderr
    lines = state.stdout.strip().splitlines()
    assert [line.split(":", 1)[0] for line in lines] == ["node 1", "node 2", "node 3", "cluster"]
    assert all("running: http://127.0.0.1:" in line for line in lines[:3])
    assert lines[3].startswith("cluster: green, 3 nodes")


def _indexed(cluster: Cluster, index: str) -> int:
    """Documents written into ``index`` so far (0 while its primaries are still starting)."""
    stats = cluster.client.indices.stats(index=index, metric="indexing")["indices"].get(index, {})
    return stats.get("primaries", {}).get("indexing", {}).get("index_total", 0)


class AliasSearcher(threading.Thread):
    """Searches through the alias until stopped: what it pointed at, and any search that failed."""

    def __init__(self, cluster: Cluster, alias: str) -> None:
        super().__init__(daemon=True)
        self.cluster, self.alias = cluster, alias
        self.targets: list[str | None] = []
        self.answered = 0
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(POLL_S):
            self.targets.append(alias_target(self.cluster, self.alias))
            try:
                self.cluster.client.search(index=self.alias, body={"query": {"match": {"title": "oak"}}, "size": 3})
                self.answered += 1
            except Exception as err:  # noqa: BLE001 - every failure is recorded and asserted on
                self.failures.append(f"{type(err).__name__}: {err}"[:200])


def test_a_sync_with_replicas_survives_a_node_killed_mid_copy(three_nodes: tuple[Path, str], tmp_path: Path) -> None:
    home, url = three_nodes
    cluster = connect_to(url)
    alias = "three-node-sync"
    n_items = 6000
    source, keywords_path, keywords = _catalog(cluster, alias, tmp_path, n_items=n_items)
    cluster.client.indices.put_settings(index=source, body={"index": {"number_of_replicas": 1}})
    cluster.client.cluster.health(index=source, params={"wait_for_status": "green", "timeout": "120s"}, request_timeout=130)
    plan = multinode.layout(home)
    victim = plan.node_home(2)  # node 3: the test's client talks to node 1
    victim_pid = json.loads((victim / "node.json").read_text())["pid"]

    writer = Writer(url, alias, n_items=n_items)
    searcher = AliasSearcher(cluster, alias)
    writer.wait_rounds(1)
    searcher.start()
    command = [sys.executable, "-m", "cogr_search.cli", "sync", "--index", alias, "--item-keywords", str(keywords_path),
               "--opensearch-url", url, "--chunk-size", "100", "--missing", "title-only", "--unknown-tolerance", "0.5",
               "--json"]
    try:
        sync = subprocess.Popen(command, cwd=REPO_ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        target = f"{alias}--r0-2"
        deadline = time.monotonic() + DEADLINE_S
        while not (cluster.client.indices.exists(index=target) and _indexed(cluster, target) >= 600):
            assert sync.poll() is None, f"the sync ended before the kill: {sync.communicate()}"
            assert time.monotonic() < deadline, "the sync did not start copying in time"
            time.sleep(POLL_S)  # poll interval: the loop checks the condition
        victim_process = psutil.Process(victim_pid)
        os.kill(victim_pid, signal.SIGKILL)
        killed_during_copy = _indexed(cluster, target) < n_items
        assert process._wait_gone(victim_process, 60)  # dead, its ports released
        multinode.start_node(plan, 2, timeout=DEADLINE_S)  # the operator brings it back
        out, err = sync.communicate(timeout=DEADLINE_S)
        reruns = 0
        while sync.returncode != 0 and reruns < 2:  # a sync that gave up is resumed by running it again
            reruns += 1
            rerun = subprocess.run(command, cwd=REPO_ROOT, env=ENV, capture_output=True, text=True,
                                   timeout=DEADLINE_S, check=False)
            sync.returncode, out, err = rerun.returncode, rerun.stdout, rerun.stderr
        assert sync.returncode == 0, err
        rounds = writer.stop()
    finally:
        searcher.stop.set()
        searcher.join(timeout=30)
        if writer.proc.poll() is None:
            writer.proc.kill()

    assert killed_during_copy
    assert alias_target(cluster, alias) == target
    assert [v.name for v in versions(cluster, alias)] == [source, target]
    assert not write_blocked(cluster, source)
    _assert_content(cluster, alias, rounds, keywords, n_items=n_items)
    assert set(searcher.targets) <= {source, target} and searcher.answered > 10
    assert searcher.failures == []
    status = _cli("sync", "--index", alias, "--status", "--opensearch-url", url, timeout=60)
    assert status.returncode == 0, status.stderr
    assert "cluster: " in status.stdout and " 3 nodes" in status.stdout


def test_every_node_expands_with_the_students_stored_in_the_cluster(three_nodes: tuple[Path, str],
                                                                    tmp_path: Path) -> None:
    """The service-free route on three nodes: the student index has a copy on every node,
    and each node, as the one a request reaches, loads the students and expands: ingest
    batches sent to each node carry the item student's keywords, and a search sent to each
    node returns the Python API's hits, expanded (no fallback)."""
    from click.testing import CliRunner

    from cogr_search.cli.main import cli
    from cogr_search.cluster.documents import KEYWORDS
    from cogr_search.cluster.ingest import ingest_items
    from cogr_search.cluster.student_store import STUDENT_INDEX
    from cogr_search.data import load_dataset, sample_catalog_path
    from cogr_search.serve.client import CogrSearch
    from tests.student_support import make_keyword_run

    _, url = three_nodes
    run = make_keyword_run(tmp_path / "runs", "three")
    distilled = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1"])
    assert distilled.exit_code == 0, distilled.output
    alias = "t-three-students"
    created = _cli("index", "create", "--index", alias, "--pipelines", "--run", str(run.root), "--cluster-url", url)
    assert created.returncode == 0 and "in the cluster" in created.stdout, created.stderr + created.stdout
    port = int(url.rsplit(":", 1)[1])
    nodes = [connect_to(f"http://127.0.0.1:{port + n}") for n in range(NODES)]
    health = nodes[0].client.cluster.health(index=STUDENT_INDEX, wait_for_status="green")  # 30 s at most
    assert health["status"] == "green", health
    copies = nodes[0].client.cat.shards(index=STUDENT_INDEX, format="json")
    assert len({c["node"] for c in copies if c["state"] == "STARTED"}) == NODES, copies

    dataset = load_dataset(sample_catalog_path())
    items = list(dataset.items.values())[:60]
    for n, node in enumerate(nodes):  # each node ingests a third, through the pipeline
        report = ingest_items(node, alias, items[n::NODES], chunk_size=10, progress=False, pipeline="cogr-ingest")
        assert report.failed == 0, report.failures
    nodes[0].client.indices.refresh(index=alias)
    enriched = nodes[0].client.count(index=alias, body={"query": {"exists": {"field": KEYWORDS}}})["count"]
    assert enriched >= len(items) // 2  # the rule-made keywords leave some items without any

    api = CogrSearch.from_run(nodes[0].client, run.root, index=alias)
    for text in [q.text for q in dataset.queries.values()][:6]:
        expected = [hit.id for hit in api.search(text, size=10).hits]
        for node in nodes:
            response = node.client.search(index=alias, body={"query": {"match": {"title": text}}, "size": 10},
                                          params={"search_pipeline": "cogr"})
            assert response["ext"]["cogr"]["expanded"] is True, (node.url, response["ext"]["cogr"])
            assert [hit["_id"] for hit in response["hits"]["hits"]] == expected, (node.url, text)
