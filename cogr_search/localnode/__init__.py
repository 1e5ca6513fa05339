"""Local single-node clusters from Maven Central jars: build, start, find and stop them.

    launchers   one `Launcher` per engine (its Maven modules, jar, main class, `Engine`)
    build       the Maven build, only when sources changed
    record      `<home>/node.json`: which node a home holds
    process     start / stop / status of the JVM
"""

from cogr_search.localnode.build import ensure_built, launcher_jar, plugins_dir
from cogr_search.localnode.launchers import (
    ELASTICSEARCH,
    ENGINES,
    HOST,
    OPENSEARCH,
    TRANSPORT_OFFSET,
    Launcher,
    LocalNodeError,
)
from cogr_search.localnode.process import start, status, stop
from cogr_search.localnode.record import NodeInfo, NodeStatus

__all__ = [
    "ELASTICSEARCH",
    "ENGINES",
    "HOST",
    "OPENSEARCH",
    "TRANSPORT_OFFSET",
    "Launcher",
    "LocalNodeError",
    "NodeInfo",
    "NodeStatus",
    "ensure_built",
    "launcher_jar",
    "plugins_dir",
    "start",
    "status",
    "stop",
]
