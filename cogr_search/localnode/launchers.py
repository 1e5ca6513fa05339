"""The local launchers, one per engine: which Maven modules, jar and main class start it.

Each `Launcher` knows the cluster-side `Engine` it starts, so a node's record, the CLI and
the tests name engines one way. Everything else about a local node is shared.
"""

from __future__ import annotations

from dataclasses import dataclass

from cogr_search.cluster import engines
from cogr_search.cluster.engines import Engine
from cogr_search.errors import CogrError

HOST = "127.0.0.1"
# The launcher's default: transport port = HTTP port + 100.
TRANSPORT_OFFSET = 100


class LocalNodeError(CogrError):
    """The local node could not be built, started or stopped; the message is one line."""


@dataclass(frozen=True)
class Launcher:
    """What differs between the local launchers; everything else is shared.

    ``modules`` are the Maven modules under ``plugins/`` the launcher is built from (in
    build order, the launcher last): a change in any of them, or in the parent pom,
    rebuilds it. ``server_jar_glob`` matches the engine's server jar in ``lib/``, proof
    that the dependencies were copied.
    """

    engine: Engine
    main_class: str
    modules: tuple[str, ...]
    jar_name: str
    server_jar_glob: str
    default_port: int

    @property
    def name(self) -> str:
        return self.engine.name

    @property
    def label(self) -> str:
        return self.engine.label

    @property
    def module(self) -> str:
        """The launcher's own Maven module (its ``target/`` holds the jar and ``lib/``)."""
        return self.modules[-1]


OPENSEARCH = Launcher(
    engine=engines.OPENSEARCH,
    main_class="org.cogr.opensearch.node.LocalNode",
    modules=("launcher-common", "cogr-plugin", "local-node"),
    jar_name="local-node.jar",
    server_jar_glob="opensearch-*.jar",
    default_port=9200,
)
# 9201 (transport 9301) by default, so that both local nodes can run side by side.
ELASTICSEARCH = Launcher(
    engine=engines.ELASTICSEARCH,
    main_class="org.cogr.elasticsearch.node.EsLocalNode",
    modules=("launcher-common", "es-node"),
    jar_name="es-node.jar",
    server_jar_glob="elasticsearch-*.jar",
    default_port=9201,
)
ENGINES: dict[str, Launcher] = {e.name: e for e in (OPENSEARCH, ELASTICSEARCH)}
