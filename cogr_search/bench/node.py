"""A throwaway local OpenSearch node for one benchmark run, on a free port by default."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cogr_search import localnode as local_node


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def throwaway_node(port: int | None, heap: str) -> Iterator[local_node.NodeInfo]:
    """Start a fresh node in a temporary home (port None: a free one), stop it afterwards."""
    with tempfile.TemporaryDirectory(prefix="cogr-bench-node-") as home:
        local_node.ensure_built()
        info = local_node.start(Path(home), port=port or free_port(), heap=heap)
        try:
            yield info
        finally:
            local_node.stop(Path(home))
