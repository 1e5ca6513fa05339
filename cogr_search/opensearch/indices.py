"""Creating the template, the first index version and the alias; swapping versions.

Readers always use the alias; writers create a new concrete version and swap the alias
in one `POST _aliases` call, so searches never see a half-written index.
"""

from __future__ import annotations

from dataclasses import dataclass

from opensearchpy import exceptions as os_exc

from cogr_search.errors import CogrError
from cogr_search.opensearch.client import Cluster
from cogr_search.opensearch.mappings import (
    IndexVersion,
    check_alias_name,
    index_template,
    next_version,
    template_name,
)


@dataclass(frozen=True)
class AliasState:
    """What `index create` found or made."""

    alias: str
    index: str
    created: bool


def put_template(cluster: Cluster, alias: str) -> None:
    """Install (or refresh) the composable index template for `alias`'s versions."""
    cluster.call(
        cluster.client.indices.put_index_template,
        name=template_name(alias),
        body=index_template(alias),
    )


def alias_target(cluster: Cluster, alias: str) -> str | None:
    """The concrete index the alias points at, or None if the alias does not exist."""
    try:
        found = cluster.call(cluster.client.indices.get_alias, name=alias)
    except os_exc.NotFoundError:
        return None
    names = sorted(found)
    if len(names) != 1:
        raise CogrError(f"alias {alias!r} points at {len(names)} indices ({', '.join(names)}); expected one")
    return names[0]


def versions(cluster: Cluster, alias: str) -> list[IndexVersion]:
    """All concrete versions of `alias` that exist, oldest (lowest n) first."""
    try:
        names = cluster.call(cluster.client.indices.get, index=f"{alias}-r*", expand_wildcards="open")
    except os_exc.NotFoundError:
        return []
    parsed = (IndexVersion.parse(alias, name) for name in names)
    return sorted((v for v in parsed if v is not None), key=lambda v: v.n)


def create_version(cluster: Cluster, alias: str, round_: int) -> IndexVersion:
    """Create an empty new version for `round_` (the template gives it the mapping)."""
    version = next_version(alias, [v.name for v in versions(cluster, alias)], round_)
    cluster.call(cluster.client.indices.create, index=version.name)
    return version


def swap_alias(cluster: Cluster, alias: str, new_index: str) -> str | None:
    """Point `alias` at `new_index` atomically; returns the index it pointed at before."""
    old = alias_target(cluster, alias)
    actions: list[dict] = [{"add": {"index": new_index, "alias": alias}}]
    if old and old != new_index:
        actions.insert(0, {"remove": {"index": old, "alias": alias}})
    cluster.call(cluster.client.indices.update_aliases, body={"actions": actions})
    return old


def create_index(cluster: Cluster, alias: str) -> AliasState:
    """Template + first version + alias; running it again changes nothing."""
    check_alias_name(alias)
    if cluster.call(cluster.client.indices.exists, index=alias) and alias_target(cluster, alias) is None:
        raise CogrError(f"{alias!r} is a concrete index, not an alias; choose another --index name")
    put_template(cluster, alias)
    current = alias_target(cluster, alias)
    if current is not None:
        return AliasState(alias, current, created=False)
    version = create_version(cluster, alias, round_=0)
    swap_alias(cluster, alias, version.name)
    cluster.call(cluster.client.cluster.health, index=version.name, wait_for_status="yellow")
    return AliasState(alias, version.name, created=True)
