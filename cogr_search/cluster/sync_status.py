"""`cogr-search sync --status`: what an alias serves and whether a sync holds it.

Read-only except for one repair: a write freeze left by a sync whose lease is stale
(expired, or its process on this host gone) is lifted, and the answer says so, so that
looking at an alias is enough to give an application its writes back. A block that will
not lift is the answer's `left_frozen` line (shown first), naming `sync --unfreeze`.
"""

from __future__ import annotations

import time

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target, versions, write_blocked
from cogr_search.cluster.sync import doc_count, sync_meta
from cogr_search.cluster.sync_lease import FreezeLeft, Holder, Notify, lift_stale_freeze, read_holder
from cogr_search.errors import CogrError
from cogr_search.cluster.suggest import missing_advice


def sync_status(cluster: Cluster, alias: str, notify: Notify = lambda message: None) -> dict:
    """The alias's serving version, its versions (state, round, documents, blocked) and lease."""
    serving = alias_target(cluster, alias)
    if serving is None:
        advice = missing_advice(cluster.client, alias, "ingest the catalog first (`cogr-search ingest DATA --index "
                                f"{alias}`)")
        raise CogrError(f"alias {alias!r} does not exist at {cluster.url}: {advice}")
    holder = read_holder(cluster, alias)
    lease, left_frozen = None, None
    if holder is not None:
        now = time.time()
        stale = holder.stale_reason(now)
        lifted, left_frozen = _lift(cluster, holder, stale, notify)
        lease = {
            "host": holder.doc.get("host"), "pid": holder.doc.get("pid"), "phase": holder.doc.get("phase"),
            "age_s": round(holder.age_s(now), 1), "expires_in_s": round(float(holder.doc.get("expires_at", 0)) - now, 1),
            "stale": stale, "freeze": holder.doc.get("freeze"), "lifted_freeze_on": lifted,
        }
    listed = []
    for version in versions(cluster, alias):
        meta = sync_meta(cluster, version.name)
        listed.append({"index": version.name, "round": version.round, "state": meta.get("state", "ingested"),
                       "model": meta.get("model"), "documents": doc_count(cluster, version.name),
                       "write_blocked": write_blocked(cluster, version.name), "serving": version.name == serving})
    return {"alias": alias, "left_frozen": left_frozen, "serving": serving, "sync": lease, "versions": listed,
            "cluster": cluster_health(cluster)}


def _lift(cluster: Cluster, holder: Holder, stale: str | None, notify: Notify) -> tuple[str | None, str | None]:
    """A stale holder's freeze lifted (the index), or the line saying it stays and what lifts it."""
    if stale is None:
        return None, None
    try:
        return lift_stale_freeze(cluster, holder, stale, notify), None
    except FreezeLeft as left:
        return None, str(left)


def cluster_health(cluster: Cluster) -> dict:
    """The cluster's health in brief: a sync on a yellow or red cluster copies onto shards that
    are still recovering, and an operator watching a sync wants to see that beside it."""
    body = cluster.call(cluster.client.cluster.health)
    keys = ("status", "number_of_nodes", "active_shards", "relocating_shards", "initializing_shards", "unassigned_shards")
    return {key: body.get(key) for key in keys}
