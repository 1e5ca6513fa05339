"""Which cluster a command talks to, and a connected `Cluster` for it.

Why a module above cluster/ and localnode/: the URL comes from the settings
(`COGR_CLUSTER_URL`) or, when none is set, from the record a local node left under the
project's home. The first is the engine adapter's business, the second the local node's;
resolving here lets cluster/ take its URL from the caller and import nothing above the core.
"""

from __future__ import annotations

from cogr_search.cluster.client import Cluster
from cogr_search.localnode import ENGINES
from cogr_search.localnode.record import read_record
from cogr_search.settings import Settings

__all__ = ["connect", "resolve_url"]


def resolve_url(settings: Settings) -> str:
    """The cluster to use: `COGR_CLUSTER_URL` (or `COGR_OPENSEARCH_URL`), else the local
    node recorded under home (OpenSearch's, else Elasticsearch's), else the default port."""
    if settings.cluster_url:
        return settings.cluster_url.rstrip("/")
    for engine in ENGINES:
        record = read_record(settings.node_home(engine))
        if record is not None:
            return record["url"].rstrip("/")
    return f"http://127.0.0.1:{settings.local_port}"


def connect(settings: Settings, url: str | None = None) -> Cluster:
    """A `Cluster` (``url``, else `resolve_url`) whose engine is known and that has answered
    once; raises `ClusterUnreachable` otherwise."""
    cluster = Cluster(settings, url or resolve_url(settings))
    cluster.info()
    return cluster
