"""Least-privilege roles for one alias: what cogr-search's commands need, and nothing more.

Why: operators give a service account the least it needs; without a shipped answer they
would have to guess, or hand out admin. The roles live in package data
(`resources/security/opensearch-roles.json`), one pair per alias:

- ``cogr_writer_<alias>``: ingest, sync (offline and online: the lease, the write block,
  the alias swap, old versions removed) and `index create` on the alias and its versions;
- ``cogr_reader_<alias>``: search and eval on them.

`cogr-search security roles --print|--apply --alias A` prints them or puts them into the
cluster's security plugin, optionally with a user mapped to each (docs/security.md).
"""

from __future__ import annotations

import json
import re
from importlib import resources

from cogr_search.cluster.client import Cluster
from cogr_search.errors import CogrError

ROLES_FILE = "opensearch-roles.json"
_ALIAS_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_NO_PERMISSION_RE = re.compile(r"no permissions for \[([^\]]+)\] and User \[name=([^,\]]+)")


def roles_for(alias: str) -> dict[str, dict]:
    """The writer and reader role bodies for ``alias`` (the security plugin's REST format)."""
    if not _ALIAS_RE.match(alias):
        raise CogrError(f"--alias {alias!r}: an index alias is lowercase letters, digits, '-', '_' and '.'")
    text = (resources.files("cogr_search") / "resources" / "security" / ROLES_FILE).read_text()
    roles = json.loads(text.replace("{alias}", alias))
    roles.pop("_comment", None)
    return roles


def apply_roles(cluster: Cluster, alias: str, users: dict[str, str] | None = None) -> list[str]:
    """Put the roles for ``alias`` into the cluster; map each listed user to its role.

    ``users`` maps ``writer``/``reader`` to a user name (existing internal or external
    users; no passwords are set here). Returns the role names written.
    """
    if cluster.engine.name != "opensearch":
        raise CogrError(f"security roles --apply: {cluster.engine.label} is not supported yet; "
                        "--print shows the OpenSearch security plugin's roles")
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


def permission_hint(reason: str) -> str | None:
    """For a 403 of the security plugin: which action was refused to whom, and which shipped
    role grants it (None: not a missing-permission answer)."""
    match = _NO_PERMISSION_RE.search(reason)
    if match is None:
        return None
    action, user = match.group(1), match.group(2)
    role = "cogr_reader_<alias>" if action.startswith(("indices:data/read", "indices:admin/aliases/get")) else "cogr_writer_<alias>"
    return (f"user {user!r} lacks {action}: map it to the role {role} "
            "(`cogr-search security roles --print --alias ALIAS` shows what each grants)")
