"""What a local node's home holds, chosen in one place: which engine line, secured or not,
one node or a cluster of several; and `start`, `stop` and `status` for it.

Why one module: `opensearch start|stop|status` (and Elasticsearch's) each asked the same
questions (is this home a cluster? is the secured line asked for a version it lacks?) in
their own words; the answers now come from `Topology`, and the commands only print them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.localnode import cleanup, multinode, process, record, security
from cogr_search.localnode.engine_lines import (
    OPENSEARCH,
    SECURE_LINES,
    TRANSPORT_OFFSET,
    EngineLine,
    LocalNodeError,
    engine_line,
)
from cogr_search.localnode.record import NodeStatus
from cogr_search.settings import Settings

CLUSTER_HEAP = "512m"
"""Each node's heap in a local cluster: three of them share the machine."""


@dataclass(frozen=True)
class Topology:
    """A home and what runs there: the engine line (``launcher``) and, for a cluster, how
    many nodes (None: whatever the home recorded, or a single node)."""

    home: Path
    launcher: EngineLine
    nodes: int | None = None

    @property
    def is_cluster(self) -> bool:
        """A cluster: more than one node asked for, or a home that already holds one."""
        return self.nodes not in (None, 1) or multinode.is_cluster_home(self.home)


def choose(engine: EngineLine, line: str, secure: bool, home: Path | None, settings: Settings,
           nodes: int | None = None) -> Topology:
    """The topology the flags ask for; refused in one line where they do not go together
    (a secured line other than the first, a secured cluster)."""
    launcher = _launcher(engine, line, secure)
    if secure and nodes not in (None, 1):
        raise LocalNodeError(f"--secure --nodes {nodes}: the secured local node is a single node (one CA and admin per home)")
    return Topology(record.norm_home(home if home is not None else settings.node_home(launcher.key)), launcher, nodes)


def _launcher(engine: EngineLine, line: str, secure: bool) -> EngineLine:
    if not secure:
        return engine_line(engine.name, line)
    secured = SECURE_LINES[engine.name]
    if line != engine.line:
        raise LocalNodeError(f"--secure --version {line}: the secured local node is {secured.description} only")
    return secured


@dataclass
class Started:
    """What `start` brought up: the first node's URL, every node's port, and a note for the
    user (a node already running that was reused, say)."""

    url: str
    ports: list[int]
    note: str | None = None
    credentials: security.Credentials | None = None
    is_cluster: bool = False


def start(topology: Topology, settings: Settings, port: int | None = None, transport_port: int | None = None,
          heap: str | None = None, timeout: float = 180.0) -> Started:
    """Start the node (or cluster) of ``topology`` and wait for it; one already running is reused."""
    if topology.is_cluster:
        if transport_port is not None:
            raise LocalNodeError("--transport-port is for a single node: a cluster's transport ports are "
                                 f"its HTTP ports + {TRANSPORT_OFFSET}")
        return _start_cluster(topology, settings, port, heap, timeout)
    launcher, home = topology.launcher, topology.home
    note = process.running_note(home, port, launcher)
    if port is None:
        port = record.last_port(home) or (None if launcher.name == OPENSEARCH.name else launcher.default_port)
    info = process.start(home, port=settings.local_port if port is None else port, heap=heap or settings.local_heap,
                         timeout=timeout, engine=launcher, transport_port=transport_port)
    creds = security.credentials(home) if launcher.secure else None
    return Started(info.url, [info.port], note, creds)


def _start_cluster(topology: Topology, settings: Settings, port: int | None, heap: str | None,
                   timeout: float) -> Started:
    nodes = topology.nodes
    if multinode.is_cluster_home(topology.home):
        recorded = multinode.layout(topology.home)
        nodes = nodes or len(recorded.ports)
        if port is not None and port != recorded.ports[0]:
            raise LocalNodeError(f"the cluster of {topology.home} listens on ports {recorded.ports[0]}-{recorded.ports[-1]}, "
                                 f"not {port}; stop it and use another --home for other ports")
    infos = multinode.start_cluster(topology.home, nodes, port=settings.local_port if port is None else port,
                                    heap=heap or CLUSTER_HEAP, timeout=max(timeout, 300.0), engine=topology.launcher)
    return Started(infos[0].url, [i.port for i in infos], is_cluster=True)


@dataclass
class Stopped:
    """What `stop` did: whether anything ran, and with ``purge`` what it removed."""

    stopped: bool
    removed: list[Path] = field(default_factory=list)
    home_kept: bool = False


def stop(topology: Topology, purge: bool = False) -> Stopped:
    """Stop the node, or every node of the cluster; with ``purge`` remove it completely."""
    if purge:
        purged = cleanup.purge(topology.home)
        return Stopped(purged.stopped, [p for p in purged.removed if p.parent != topology.home], purged.home_kept)
    if multinode.is_cluster_home(topology.home):
        return Stopped(multinode.stop_cluster(topology.home))
    return Stopped(process.stop(topology.home))


@dataclass
class Status:
    """Each node of the home, and a cluster's health (None for a single node, or none up)."""

    nodes: list[NodeStatus]
    is_cluster: bool
    health: str | None = None

    @property
    def running(self) -> bool:
        return any(node.running for node in self.nodes)


def status(topology: Topology) -> Status:
    """Whether the home's node (or each node of its cluster) runs, where, and its version."""
    if not multinode.is_cluster_home(topology.home):
        return Status([process.status(topology.home)], is_cluster=False)
    states = multinode.cluster_status(topology.home)
    up = [s for s in states if s.running]
    return Status(states, is_cluster=True, health=multinode.health(str(up[0].url)) if up else None)
