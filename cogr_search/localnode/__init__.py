"""Local single-node clusters from Maven Central jars: build, start, find and stop them.

    launchers   one `Launcher` per engine line (Maven modules, build folder, jar, Java, `Engine`)
    java        which JDK builds and runs a line (Java 21+ for OpenSearch 3.x)
    build       the Maven build, only when sources changed
    record      `<home>/node.json`: which node a home holds
    process     start / stop / status of the JVM
"""

from cogr_search.localnode.build import ensure_built, launcher_jar, plugins_dir
from cogr_search.localnode.launchers import (
    ELASTICSEARCH,
    ELASTICSEARCH_9,
    ELASTICSEARCH_LINES,
    ELASTICSEARCH_SECURE,
    ENGINES,
    HOST,
    LAUNCHERS,
    LINES,
    OPENSEARCH,
    OPENSEARCH_3,
    OPENSEARCH_SECURE,
    OPENSEARCH_LINES,
    SECURE_LINES,
    TRANSPORT_OFFSET,
    Launcher,
    LocalNodeError,
    engine_line,
    opensearch_line,
)
from cogr_search.localnode.process import start, status, stop
from cogr_search.localnode.record import NodeInfo, NodeStatus

__all__ = [
    "ELASTICSEARCH",
    "ELASTICSEARCH_9",
    "ELASTICSEARCH_LINES",
    "ELASTICSEARCH_SECURE",
    "ENGINES",
    "HOST",
    "LAUNCHERS",
    "LINES",
    "OPENSEARCH",
    "OPENSEARCH_3",
    "OPENSEARCH_SECURE",
    "OPENSEARCH_LINES",
    "SECURE_LINES",
    "TRANSPORT_OFFSET",
    "Launcher",
    "LocalNodeError",
    "NodeInfo",
    "NodeStatus",
    "engine_line",
    "ensure_built",
    "opensearch_line",
    "launcher_jar",
    "plugins_dir",
    "start",
    "status",
    "stop",
]
