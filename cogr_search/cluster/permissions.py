"""What a security refusal (HTTP 403) of either engine says: which action was refused to
whom, and which of the project's shipped roles grants it.

Why a module of its own: `engines.describe_error` turns every 403 into one line with this
hint, and the role files' reader (`security_roles`) sits above the client; the hint needs
neither, only the refusal's text.
"""

from __future__ import annotations

import re

# OpenSearch: "no permissions for [indices:admin/create] and User [name=reader, ...]"
_NO_PERMISSION_RE = re.compile(r"no permissions for \[([^\]]+)\] and User \[name=([^,\]]+)")
# Elasticsearch: "action [indices:admin/create] is unauthorized for user [reader] with effective roles [...]"
_UNAUTHORIZED_RE = re.compile(r"action \[([^\]]+)\] is unauthorized for user \[([^\]]+)\]")
# Elasticsearch also says which of its privileges grant the action.
_GRANTED_BY_RE = re.compile(r"granted by the (index|cluster) privileges \[([^\]]+)\]")


def permission_hint(reason: str, alias: str | None = None, writer_only: bool = False) -> str | None:
    """For a 403 of either engine's security: which action was refused to whom, and which
    shipped role grants it, named for ``alias`` when the refused call's alias is known
    (None: not a missing-permission answer). ``writer_only``: the call was on an index only
    the writer may touch (the students' `cogr-students`), reads included."""
    match = _NO_PERMISSION_RE.search(reason) or _UNAUTHORIZED_RE.search(reason)
    if match is None:
        return None
    action, user = match.group(1), match.group(2)
    reads = action.startswith(("indices:data/read", "indices:admin/get"))  # what the reader's role grants
    kind = "reader" if reads and not writer_only else "writer"
    role = f"cogr_{kind}_{alias or '<alias>'}"
    granted = _GRANTED_BY_RE.search(reason)
    privileges = f" (the {granted.group(1)} privileges {granted.group(2)} grant it)" if granted else ""
    return (f"user {user!r} lacks {action}{privileges}: map it to the role {role} "
            "(`cogr-search security roles --print --alias ALIAS` shows what each grants)")
