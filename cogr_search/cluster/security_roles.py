"""Least-privilege roles for one alias: what cogr-search's commands need, and nothing more.

Why: operators give a service account the least it needs; without a shipped answer they
would have to guess, or hand out admin. The roles live in package data, one file per
engine (`mappings/security/opensearch-roles.json` for the OpenSearch security plugin,
`elasticsearch-roles.json` for x-pack security's role descriptors), one pair per alias:

- ``cogr_writer_<alias>``: ingest, sync (offline and online: the lease, the write block,
  the alias swap, old versions removed) and `index create` on the alias and its own
  indices `<alias>--*` (versions and lease; `names.py`: no other alias's index matches);
- ``cogr_reader_<alias>``: search and eval on them.

Each role entry carries a `_why` (dropped from what is printed or applied): the command
that needs the privilege, or why it is kept without a test that removes it
(tests/test_role_scope.py removes each privilege and sees its command fail).

`cogr-search security roles --print|--apply --alias A` prints them or puts them into the
cluster's security plugin, optionally with a user mapped to each (docs/security.md).

A 403 of either engine becomes one line naming the refused action, the user and the role
that grants it (`permission_hint`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from cogr_search.cluster.definitions import definitions_dir

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.names import check_alias, legacy_versions_regex, own_indices_pattern
from cogr_search.errors import CogrError

ROLES_FILES = {"opensearch": "opensearch-roles.json", "elasticsearch": "elasticsearch-roles.json"}
# OpenSearch: "no permissions for [indices:admin/create] and User [name=reader, ...]"
_NO_PERMISSION_RE = re.compile(r"no permissions for \[([^\]]+)\] and User \[name=([^,\]]+)")
# Elasticsearch: "action [indices:admin/create] is unauthorized for user [reader] with effective roles [...]"
_UNAUTHORIZED_RE = re.compile(r"action \[([^\]]+)\] is unauthorized for user \[([^\]]+)\]")
# Elasticsearch also says which of its privileges grant the action.
_GRANTED_BY_RE = re.compile(r"granted by the (index|cluster) privileges \[([^\]]+)\]")


def roles_for(alias: str, engine: str = "opensearch") -> dict[str, dict]:
    """The writer and reader role bodies for ``alias`` in ``engine``'s REST format (the
    security plugin's roles API, or x-pack's role descriptors).

    Refused (one line) for an alias whose patterns could reach another alias's indices
    (`names.check_alias`): the patterns are only exact because such aliases are refused."""
    check_alias(alias, "--alias")
    roles = _fill(role_templates(engine), _placeholders(alias))
    for role in roles.values():
        role.pop("_why", None)
    return roles


def role_templates(engine: str) -> dict[str, dict]:
    """The role file of ``engine`` as shipped: placeholders unfilled, the `_why` notes kept."""
    text = (definitions_dir() / "security" / ROLES_FILES[engine]).read_text()
    roles = json.loads(text)
    roles.pop("_comment", None)
    return roles


def _placeholders(alias: str) -> dict[str, str]:
    """Each placeholder of the role files: whole strings, so a regex's backslashes need no JSON escaping."""
    return {"{alias}": alias, "{alias}--*": own_indices_pattern(alias),
            "{alias_legacy_versions}": legacy_versions_regex(alias)}


def _fill(value: object, placeholders: dict[str, str]) -> object:
    if isinstance(value, dict):
        return {_fill(key, placeholders): _fill(item, placeholders) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, placeholders) for item in value]
    if isinstance(value, str):
        if value in placeholders:
            return placeholders[value]
        return value.replace("{alias}", placeholders["{alias}"])
    return value


def apply_roles(cluster: Cluster, alias: str, users: dict[str, str] | None = None,
                notify: Callable[[str], None] = lambda message: None) -> list[str]:
    """Put the roles for ``alias`` into the cluster; map each listed user to its role.

    ``users`` maps ``writer``/``reader`` to a user name (no passwords are set here). Each
    is looked up before anything is written: an Elasticsearch native user that does not
    exist is refused; on OpenSearch, where a mapping may name a user of an external
    backend (LDAP, SAML), a name the internal users lack is said through ``notify``.
    A caller who is not a security admin gets one line saying so. Returns the role names
    written.
    """
    from cogr_search.cluster.engines import API_ERRORS, status_of

    roles_for(alias, cluster.engine.name)  # a bad alias is refused before the cluster is asked
    try:
        for user in (users or {}).values():
            _check_user(cluster, user, notify)
        if cluster.engine.name == "elasticsearch":
            return _apply_elasticsearch(cluster, alias, users or {})
        return _apply_opensearch(cluster, alias, users or {})
    except API_ERRORS as err:
        if status_of(err) != 403:
            raise
        raise CogrError(_not_security_admin(cluster)) from err


def _check_user(cluster: Cluster, user: str, notify: Callable[[str], None]) -> None:
    """Whether ``user`` exists where the engine keeps users (x-pack's native realm, the
    security plugin's internal users), before any role is written."""
    from cogr_search.cluster.engines import NOT_FOUND

    opensearch = cluster.engine.name == "opensearch"
    path = f"/_plugins/_security/api/internalusers/{user}" if opensearch else f"/_security/user/{user}"
    try:
        found = cluster.request("GET", path)
    except NOT_FOUND:
        found = {}
    if user in (found or {}):
        return
    create = (f"PUT _plugins/_security/api/internalusers/{user}" if opensearch
              else f"PUT _security/user/{user}") + " with a password (docs/security.md)"
    if not opensearch:
        raise CogrError(f"--writer-user/--reader-user {user!r}: no such native user at {cluster.url}; create it "
                        f"first ({create}); nothing was applied")
    notify(f"warning: {user!r} is not an internal user of OpenSearch at {cluster.url}: mapped by name anyway (right "
           f"for a user of another backend, e.g. LDAP); else create it first ({create})")


def _not_security_admin(cluster: Cluster) -> str:
    """The line for a 403 from the engine's security API: the caller is not a security admin."""
    who = f"user {cluster.settings.cluster_user!r}" if cluster.settings.cluster_user else "this API key"
    admin = ("a user mapped to all_access, e.g. the admin of `opensearch start --secure`"
             if cluster.engine.name == "opensearch"
             else "a user with the manage_security privilege (superuser, e.g. the admin of "
                  "`elasticsearch start --secure`)")
    return (f"security roles --apply needs a security admin: {cluster.engine.label} at {cluster.url} refused {who} "
            f"(HTTP 403); run it as {admin}")


def _apply_opensearch(cluster: Cluster, alias: str, users: dict[str, str]) -> list[str]:
    """The roles API, then the roles mapping of each listed user."""
    written = []
    for name, body in roles_for(alias).items():
        cluster.call(cluster.client.transport.perform_request, "PUT", f"/_plugins/_security/api/roles/{name}", body=body)
        written.append(name)
        kind = "writer" if name.startswith("cogr_writer_") else "reader"
        if users and kind in users:
            mapping = {"users": [users[kind]]}
            cluster.call(cluster.client.transport.perform_request, "PUT",
                         f"/_plugins/_security/api/rolesmapping/{name}", body=mapping)
    return written


def _apply_elasticsearch(cluster: Cluster, alias: str, users: dict[str, str]) -> list[str]:
    """`PUT _security/role/NAME` for each role; each listed (native) user gets its role added
    to the roles it holds (`PUT _security/user/NAME` without a password keeps the password)."""
    written = []
    for name, body in roles_for(alias, "elasticsearch").items():
        _native_write(cluster, "PUT", f"/_security/role/{name}", body)
        written.append(name)
        kind = "writer" if name.startswith("cogr_writer_") else "reader"
        if kind in users:
            user = cluster.request("GET", f"/_security/user/{users[kind]}")[users[kind]]
            roles = sorted({*user.get("roles", []), name})
            _native_write(cluster, "PUT", f"/_security/user/{users[kind]}", {"roles": roles})
    return written


def _native_write(cluster: Cluster, method: str, path: str, body: dict) -> None:
    """One write to x-pack's native store; a cluster that cannot create its `.security` index
    (a distribution without the analysis-common module) is said in one line."""
    from cogr_search.cluster.engines import API_ERRORS, error_reason

    try:
        cluster.request(method, path, body)
    except API_ERRORS as err:
        reason = error_reason(err)
        if "pattern_capture" not in reason:
            raise
        raise CogrError(
            f"Elasticsearch at {cluster.url} cannot store native roles or users ({path}: {reason}; its .security "
            "index needs the analysis-common module): put the roles into each node's config/roles.yml instead, one "
            "`NAME: {...}` line per role of `cogr-search security roles --print --engine elasticsearch --alias ALIAS`"
        ) from err


def permission_hint(reason: str, alias: str | None = None, writer_only: bool = False) -> str | None:
    """For a 403 of either engine's security: which action was refused to whom, and which
    shipped role grants it, named for ``alias`` when the refused call's alias is known
    (None: not a missing-permission answer). ``writer_only``: the call was on an index only
    the writer may touch (the students' `cogr-students`), reads included."""
    match = _NO_PERMISSION_RE.search(reason) or _UNAUTHORIZED_RE.search(reason)
    if match is None:
        return None
    action, user = match.group(1), match.group(2)
    reads = action.startswith(("indices:data/read", "indices:admin/aliases/get"))
    kind = "reader" if reads and not writer_only else "writer"
    role = f"cogr_{kind}_{alias or '<alias>'}"
    granted = _GRANTED_BY_RE.search(reason)
    privileges = f" (the {granted.group(1)} privileges {granted.group(2)} grant it)" if granted else ""
    return (f"user {user!r} lacks {action}{privileges}: map it to the role {role} "
            "(`cogr-search security roles --print --alias ALIAS` shows what each grants)")
