"""Creating index versions and the alias; swapping versions; checking what a version holds.

Readers always use the alias; writers create a new concrete version and swap the alias
in one `POST _aliases` call, so searches never see a half-written index. Every version
is created with the explicit body of mappings/ and then checked: if an index template
of someone else's changed its mapping or aliases, the version is deleted again and the
template named, rather than served with a different mapping.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


from cogr_search.errors import CogrError
from cogr_search.cluster import title_pipeline
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.engines import API_ERRORS, NOT_FOUND, error_type, one_line, status_of
from cogr_search.cluster.names import legacy_versions_wildcard, own_indices_pattern, versions_wildcard
from cogr_search.cluster.mappings import (
    IndexVersion,
    check_alias_name,
    index_body,
    item_properties,
    legacy_template_name,
    next_version,
)
from cogr_search.cluster.suggest import missing_advice


@dataclass(frozen=True)
class AliasState:
    """What `index create` found or made."""

    alias: str
    index: str
    created: bool


@dataclass(frozen=True)
class Shape:
    """What a new version copies from the one it replaces: shard and replica counts, and
    the default ingest and search pipelines an operator set (`index create
    --default-pipelines`), so a sync keeps apps on `?search_pipeline`-free searches."""

    shards: int
    replicas: int
    pipelines: tuple[tuple[str, str], ...] = ()

    def index_settings(self) -> dict[str, str]:
        return dict(self.pipelines)


def alias_target(cluster: Cluster, alias: str) -> str | None:
    """The concrete index the alias points at, or None if the alias does not exist.

    Asked of the alias and its own indices only (``A,A--*``), not of every index: a user
    whose role grants only this alias (`security roles`) may not look at the others. An
    earlier release's version (``A-r<round>-<n>``) is found through the alias itself."""
    try:
        found = cluster.call(cluster.client.indices.get_alias, index=f"{alias},{own_indices_pattern(alias)}",
                             name=alias, ignore_unavailable=True)
    except NOT_FOUND:
        return None
    names = sorted(found)
    if len(names) != 1:
        raise CogrError(f"alias {alias!r} points at {len(names)} indices ({', '.join(names)}); expected one")
    return names[0]


def require_index(cluster: Cluster, name: str, flag: str = "--index") -> None:
    """Refuse an index or alias that does not exist, before a command writes anything
    (a run folder, a version) that it would otherwise leave behind."""
    if not cluster.call(cluster.client.indices.exists, index=name):
        advice = missing_advice(cluster.client, name, f"run `cogr-search ingest DATA --index {name}` first")
        raise CogrError(f"{flag} {name}: no such index or alias at {cluster.url}; {advice}")


def versions(cluster: Cluster, alias: str) -> list[IndexVersion]:
    """All concrete versions of `alias` that exist, oldest (lowest n) first: its own
    (`A--r*`) and those an earlier release named `A-r<round>-<n>`.

    The legacy expression `A-r*` also lists the versions of an alias `A-rugs`; the exact
    pattern keeps only this alias's own. On OpenSearch, whose security refuses a wildcard
    that reaches an index the user may not see, a refusal there is one line saying why.
    """
    names = _index_names(cluster, versions_wildcard(alias))
    try:
        names += _index_names(cluster, legacy_versions_wildcard(alias))
    except API_ERRORS as err:
        if status_of(err) != 403:
            raise
        raise CogrError(
            f"listing the versions earlier releases named {alias}-r<round>-<n> was refused ({one_line(err)}): "
            f"{alias}-r* also reaches another alias's such versions; sync that alias once, then delete its old "
            "versions as an admin (docs/security.md, 'Version names')"
        ) from err
    parsed = (IndexVersion.parse(alias, name) for name in names)
    return sorted((v for v in parsed if v is not None), key=lambda v: v.n)


def _index_names(cluster: Cluster, expression: str) -> list[str]:
    try:
        return list(cluster.call(cluster.client.indices.get, index=expression, expand_wildcards="open,closed"))
    except NOT_FOUND:
        return []


PIPELINE_SETTINGS = ("default_pipeline", "search.default_pipeline")


def shape_of(cluster: Cluster, index: str) -> Shape:
    """The shard and replica counts and the default pipelines of an existing index."""
    found = cluster.call(cluster.client.indices.get_settings, index=index, flat_settings=True)
    settings = found[index]["settings"]
    pipelines = tuple((name, settings[f"index.{name}"]) for name in PIPELINE_SETTINGS if settings.get(f"index.{name}"))
    return Shape(int(settings["index.number_of_shards"]), int(settings["index.number_of_replicas"]), pipelines)


def _templates_matching(cluster: Cluster, name: str) -> list[str]:
    try:
        found = cluster.call(cluster.client.indices.get_index_template)
    except NOT_FOUND:
        return []
    return sorted(
        t["name"]
        for t in found.get("index_templates", [])
        if any(fnmatch.fnmatchcase(name, p) for p in t["index_template"].get("index_patterns", []))
    )


def _check_created(cluster: Cluster, name: str, shape: Shape | None) -> None:
    """The new index holds exactly mappings/'s fields, the shape asked for, and no alias."""
    found = cluster.call(cluster.client.indices.get, index=name)[name]
    problems = []
    if found.get("mappings", {}).get("properties", {}) != item_properties(cluster.settings.mappings_dir):
        problems.append("its mapping differs from mappings/")
    if found.get("aliases"):
        problems.append(f"it was given aliases {sorted(found['aliases'])}")
    index = found["settings"]["index"]
    if shape and (int(index["number_of_shards"]), int(index["number_of_replicas"])) != (shape.shards, shape.replicas):
        problems.append("its shard or replica count differs")
    if problems:
        cluster.call(cluster.client.indices.delete, index=name)
        templates = ", ".join(_templates_matching(cluster, name)) or "none found"
        raise CogrError(
            f"new index {name}: {'; '.join(problems)} (index templates matching it: {templates}); "
            "deleted it again: exclude the pattern from those templates"
        )


def create_version(cluster: Cluster, alias: str, round_: int, shape: Shape | None = None, meta: dict | None = None,
                   **index_settings: object) -> IndexVersion:
    """Create an empty new version for `round_` with the explicit body of mappings/.

    `shape` (default: the file's counts) is the source version's shards and replicas;
    `meta` goes into the mapping's `_meta` in the same request (a later put would be one
    more cluster-state update for every sync).
    """
    version = next_version(alias, [v.name for v in versions(cluster, alias)], round_)
    copied = shape.index_settings() if shape else {}
    body = index_body(
        shape.shards if shape else None,
        shape.replicas if shape else None,
        templates=cluster.settings.mappings_dir,
        **copied,
        **index_settings,
    )
    if meta:
        body["mappings"]["_meta"] = {**body["mappings"].get("_meta", {}), **meta}
    try:
        cluster.call(cluster.client.indices.create, index=version.name, body=body)
    except API_ERRORS as err:
        # A create that timed out on the client may have succeeded on the server, and the
        # retry then finds the index: the name is new (next_version), so it is ours, and
        # _check_created still verifies that it is what we asked for.
        if error_type(err) != "resource_already_exists_exception":
            raise
    _check_created(cluster, version.name, shape)
    title_pipeline.install(cluster, version.name)
    return version


def swap_alias(cluster: Cluster, alias: str, new_index: str) -> str | None:
    """Point `alias` at `new_index` atomically; returns the index it pointed at before."""
    old = alias_target(cluster, alias)
    actions: list[dict] = [{"add": {"index": new_index, "alias": alias}}]
    if old and old != new_index:
        actions.insert(0, {"remove": {"index": old, "alias": alias}})
    cluster.call(cluster.client.indices.update_aliases, body={"actions": actions})
    return old


def set_write_block(cluster: Cluster, index: str, blocked: bool) -> None:
    """Block (or allow) writes to `index`; sync blocks its source for the copy."""
    cluster.call(cluster.client.indices.put_settings, index=index, body={"index": {"blocks": {"write": blocked or None}}})


def write_blocked(cluster: Cluster, index: str) -> bool:
    found = cluster.call(cluster.client.indices.get_settings, index=index, name="index.blocks.write")
    return str(found.get(index, {}).get("settings", {}).get("index", {}).get("blocks", {}).get("write")) == "true"


def _drop_legacy_template(cluster: Cluster, alias: str) -> None:
    """Earlier releases installed `cogr-<alias>` matching `<alias>-r*`; it must not apply
    to new versions (nor to another alias's), so it goes. Looked up first, so that a role
    without the right to delete templates (`security roles`) needs it only when one exists."""
    try:
        cluster.call(cluster.client.indices.get_index_template, name=legacy_template_name(alias))
        cluster.call(cluster.client.indices.delete_index_template, name=legacy_template_name(alias))
    except NOT_FOUND:
        pass


def create_index(cluster: Cluster, alias: str) -> AliasState:
    """First version + alias; running it again changes nothing."""
    check_alias_name(alias)
    if cluster.call(cluster.client.indices.exists, index=alias) and alias_target(cluster, alias) is None:
        raise CogrError(f"{alias!r} is a concrete index, not an alias; choose another --index name")
    _drop_legacy_template(cluster, alias)
    current = alias_target(cluster, alias)
    if current is not None:
        return AliasState(alias, current, created=False)
    version = create_version(cluster, alias, round_=0)
    swap_alias(cluster, alias, version.name)
    cluster.call(cluster.client.cluster.health, index=version.name, wait_for_status="yellow")
    return AliasState(alias, version.name, created=True)
