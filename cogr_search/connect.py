"""Which cluster a command talks to, and a connected `Cluster` for it.

Why a module above cluster/ and localnode/: the URL comes from the settings
(`COGR_CLUSTER_URL`) or, when none is set, from the record a local node left under the
project's home. The first is the engine adapter's business, the second the local node's;
resolving here lets cluster/ take its URL from the caller and import nothing above the core.
"""

from __future__ import annotations

import logging

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.connection_checks import check_url
from cogr_search.localnode import ENGINES
from cogr_search.localnode.record import RECORD_NAME, read_record
from cogr_search.settings import Settings

__all__ = ["connect", "locate", "resolve_url"]

log = logging.getLogger(__name__)
"""Notes for the user (which cluster a command uses when none was named); the CLI shows
them on stderr, a Python app sees them where it sends its logging."""


def resolve_url(settings: Settings) -> str:
    """The cluster to use: `COGR_CLUSTER_URL` (or `COGR_OPENSEARCH_URL`), else the local
    node recorded under home (OpenSearch's, else Elasticsearch's), else the default port."""
    return locate(settings)[0]


def locate(settings: Settings) -> tuple[str, str | None]:
    """The cluster to use and, when nobody named it, where it came from (`the default`, or
    the local node's record): forgotten exports would otherwise send every command to the
    local node without a word. A named URL is checked for its scheme here, at once."""
    if settings.cluster_url:
        return check_url(settings.cluster_url.rstrip("/")), None
    for engine in ENGINES:
        record = read_record(settings.node_home(engine))
        if record is not None:
            return record["url"].rstrip("/"), f"the local node recorded in {settings.node_home(engine) / RECORD_NAME}"
    return f"http://127.0.0.1:{settings.local_port}", "the default"


def connect(settings: Settings, url: str | None = None) -> Cluster:
    """A `Cluster` (``url``, else `locate`) whose engine is known and that has answered once;
    raises `ClusterUnreachable` otherwise."""
    url, origin = (url, None) if url else locate(settings)
    cluster = Cluster(settings, url, origin=origin)
    cluster.info()
    if cluster.origin:
        log.info("cluster: %s (%s; set COGR_CLUSTER_URL to choose)", cluster.url, cluster.origin)
    return cluster
