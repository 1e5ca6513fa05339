"""Local OpenSearch and Elasticsearch nodes from the engines' stock distributions (Maven
Central's `integ-test-zip`), with the project's plugin zip installed: build, start, find,
stop and remove them, one node or a cluster, secured or not.

    engine_lines    one `EngineLine` per engine line (distribution, plugin zip, Java, `Engine`)
    topology        what a home holds (line, secured, one node or several); start / stop / status
    build           the plugin zip's Maven build, only when its sources changed
    distribution    the stock distribution, unpacked once, with the plugin installed
    java            which JDK builds and runs a line (21+ for OpenSearch 3.x, Elasticsearch 9.x)
    stock           one node's runtime folder, configuration and command line
    process         start / stop / status of one node's process
    multinode       a cluster of several nodes on loopback
    record          `<home>/node.json`: which node a home holds
    security        the secured OpenSearch node (TLS, admin user) and the certificates both share
    es_security     the secured Elasticsearch node (x-pack)
    keystore        secure settings through the distribution's keystore tool
    service_user    who a node runs as (a root caller's node runs as a system user)
    cleanup         removing a node completely (`stop --purge`)
"""

from cogr_search.localnode.build import ensure_built, plugin_zip, plugins_dir
from cogr_search.localnode.engine_lines import (
    ELASTICSEARCH,
    ELASTICSEARCH_9,
    ELASTICSEARCH_LINES,
    ELASTICSEARCH_SECURE,
    ENGINES,
    HOST,
    ENGINE_LINES,
    LINES,
    OPENSEARCH,
    OPENSEARCH_3,
    OPENSEARCH_SECURE,
    OPENSEARCH_LINES,
    SECURE_LINES,
    TRANSPORT_OFFSET,
    EngineLine,
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
    "ENGINE_LINES",
    "LINES",
    "OPENSEARCH",
    "OPENSEARCH_3",
    "OPENSEARCH_SECURE",
    "OPENSEARCH_LINES",
    "SECURE_LINES",
    "TRANSPORT_OFFSET",
    "EngineLine",
    "LocalNodeError",
    "NodeInfo",
    "NodeStatus",
    "engine_line",
    "ensure_built",
    "opensearch_line",
    "plugin_zip",
    "plugins_dir",
    "start",
    "status",
    "stop",
]
