"""A multi-node OpenSearch cluster on loopback: N stock nodes that form one cluster.

Why: production clusters have several nodes, replicas and nodes that die; a sync that only
ever ran on one node with no replicas has never seen shard relocation, a lost node or a
replica recovering. ``cogr-search opensearch start --nodes 3`` gives a laptop or CI that
cluster with the same distribution as a single node.

Each node is an ordinary local node (`process.start` with `stock.Peers`) in its own home,
``<home>/n1 .. nN``, on consecutive HTTP ports (``port .. port+N-1``; transport = HTTP +
100). ``<home>/cluster.json`` names them, so that ``stop``, ``status`` and the restart of
one node find them all. The nodes start concurrently: none is ready before a majority of
the first cluster managers has met.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.localnode import process
from cogr_search.localnode.engine_lines import OPENSEARCH, TRANSPORT_OFFSET, EngineLine, ENGINE_LINES, LocalNodeError
from cogr_search.localnode.record import NodeInfo, NodeStatus, norm_home
from cogr_search.localnode.stock import Peers

RECORD = "cluster.json"
MAX_NODES = 9


@dataclass(frozen=True)
class ClusterLayout:
    """Where each node of a cluster lives and listens."""

    home: Path
    ports: tuple[int, ...]
    heap: str
    engine: EngineLine

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"cogr-n{i + 1}" for i in range(len(self.ports)))

    def node_home(self, index: int) -> Path:
        return self.home / f"n{index + 1}"

    def peers(self, index: int) -> Peers:
        transports = tuple(p + TRANSPORT_OFFSET for p in self.ports)
        return Peers(name=self.names[index], names=self.names, transport_ports=transports)


def is_cluster_home(home: Path) -> bool:
    return (norm_home(home) / RECORD).is_file()


def layout(home: Path) -> ClusterLayout:
    """The cluster recorded in ``home`` (`start_cluster` wrote it)."""
    home = norm_home(home)
    try:
        record = json.loads((home / RECORD).read_text())
        return ClusterLayout(home, tuple(record["ports"]), record["heap"], ENGINE_LINES[record["launcher"]])
    except (OSError, ValueError, KeyError) as err:
        raise LocalNodeError(f"{home / RECORD} is not a cluster record ({err})") from err


def start_cluster(
    home: Path, nodes: int, port: int = 9200, heap: str = "512m", timeout: float = 300.0, engine: EngineLine = OPENSEARCH
) -> list[NodeInfo]:
    """Start ``nodes`` nodes of ``engine`` in ``home`` as one cluster; their infos, node 1 first.

    Idempotent like `process.start`: running nodes are reused. If any node fails to start,
    the ones this call started are stopped again and the error is raised.
    """
    if engine.engine.name != "opensearch":
        raise LocalNodeError(f"--nodes: a local cluster is made of OpenSearch nodes, not {engine.description}")
    if not 2 <= nodes <= MAX_NODES:
        raise LocalNodeError(f"--nodes {nodes}: a local cluster has 2 to {MAX_NODES} nodes (1: leave --nodes out)")
    home = norm_home(home)
    if is_cluster_home(home):
        recorded = layout(home)
        if len(recorded.ports) != nodes or recorded.engine != engine:
            raise LocalNodeError(
                f"{home} holds a {len(recorded.ports)}-node {recorded.engine.description} cluster; "
                f"stop it and use another --home for {nodes} nodes of {engine.description}"
            )
        plan = recorded
    else:
        plan = ClusterLayout(home, tuple(range(port, port + nodes)), heap, engine)
        home.mkdir(parents=True, exist_ok=True)
        with atomic_open(home / RECORD) as out:
            json.dump({"ports": list(plan.ports), "heap": heap, "launcher": engine.key}, out)
    with ThreadPoolExecutor(max_workers=nodes) as pool:
        futures = [pool.submit(start_node, plan, i, timeout) for i in range(nodes)]
        errors = [f.exception() for f in futures]
    failed = [e for e in errors if e is not None]
    if failed:
        stop_cluster(home)
        raise failed[0]
    return [f.result() for f in futures]


def start_node(plan: ClusterLayout, index: int, timeout: float = 300.0) -> NodeInfo:
    """Start (or restart, after a crash) node ``index`` of ``plan``; it joins the others."""
    return process.start(
        plan.node_home(index), port=plan.ports[index], heap=plan.heap, timeout=timeout, engine=plan.engine,
        peers=plan.peers(index),
    )


def stop_cluster(home: Path, timeout: float = 60) -> bool:
    """Stop every node of the cluster in ``home``; False if none was running.

    The record stays: a later start brings the same nodes back on the same ports and data.
    """
    plan = layout(home)
    with ThreadPoolExecutor(max_workers=len(plan.ports)) as pool:
        stopped = list(pool.map(lambda i: process.stop(plan.node_home(i), timeout), range(len(plan.ports))))
    return any(stopped)


def cluster_status(home: Path) -> list[NodeStatus]:
    """Each node's status, node 1 first."""
    plan = layout(home)
    return [process.status(plan.node_home(i)) for i in range(len(plan.ports))]


def health(url: str) -> str:
    """One line of ``_cluster/health``: status, nodes, and shards not yet where they belong."""
    body = process._get_json(f"{url}/_cluster/health", 10.0)
    if body is None:
        return f"no answer from {url}"
    return health_line(body)


def health_line(body: dict) -> str:
    """``green, 3 nodes, 4 active shards, ...``: what `status` and `sync --status` print."""
    return (f"{body.get('status')}, {body.get('number_of_nodes')} nodes, "
            f"{body.get('active_shards')} active shards, {body.get('relocating_shards')} relocating, "
            f"{body.get('initializing_shards')} initializing, {body.get('unassigned_shards')} unassigned")
