"""A throwaway local OpenSearch node for one benchmark run, on a free port by default."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cogr_search import localnode as local_node
import time
from cogr_search.localnode import multinode, process


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def throwaway_node(port: int | None, heap: str, nodes: int = 1) -> Iterator[local_node.NodeInfo]:
    """Start a fresh node (``nodes`` > 1: a loopback cluster) in a temporary home (port None:
    free ones), stop it afterwards; the info of its first node."""
    with tempfile.TemporaryDirectory(prefix="cogr-bench-node-") as home:
        if nodes == 1:
            info = local_node.start(Path(home), port=port or free_port_run(1), heap=heap)
        else:
            info = multinode.start_cluster(Path(home), nodes, port=port or free_port_run(nodes), heap=heap)[0]
        try:
            yield info
        finally:
            if nodes == 1:
                local_node.stop(Path(home))
            else:
                multinode.stop_cluster(Path(home))


def start_times(engine: local_node.EngineLine, nodes: int, repeat: int, heap: str) -> dict:
    """Start a fresh node (or ``nodes``-node cluster) ``repeat`` times in throwaway homes: the
    seconds from launch to a yellow answer, and to stopped again."""

    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="cogr-bench-node-") as home:
            started = time.perf_counter()
            if nodes == 1:
                local_node.start(Path(home), port=free_port_run(1), heap=heap, engine=engine)
            else:
                multinode.start_cluster(Path(home), nodes, port=free_port_run(nodes), heap=heap, engine=engine)
            up = time.perf_counter() - started
            if nodes == 1:
                local_node.stop(Path(home))
            else:
                multinode.stop_cluster(Path(home))
            runs.append({"start_s": round(up, 2), "stop_s": round(time.perf_counter() - started - up, 2)})
    return {"engine": engine.description, "nodes": nodes, "heap": heap, "runs": runs,
            "start_s_mean": round(sum(r["start_s"] for r in runs) / len(runs), 2)}


def free_port_run(n: int) -> int:
    """A port P with P..P+n-1 and their transport ports free."""
    for _ in range(200):
        port = free_port()
        wanted = [p for i in range(n) for p in (port + i, port + i + local_node.TRANSPORT_OFFSET)]
        if max(wanted) <= 65535 and all(process._port_free(p) for p in wanted):
            return port
    raise local_node.LocalNodeError("no free run of ports found")
