"""The alias a user probably meant, for a refusal of an index name that does not exist.

Why: "index 'prodcts' does not exist: run ingest --index prodcts" advises creating the
typo. When an existing alias is close (difflib's ratio, the standard library's
fuzzy match), the line names it instead.
"""

from __future__ import annotations

import difflib
from typing import Any

from cogr_search.cluster.engines import CLIENT_ERRORS, Engine


def existing_aliases(client: Any) -> list[str]:
    """Every alias the caller may see (none starting with '.', the engines' own); empty
    when the cluster refuses the listing (a reader of one alias may not list the others):
    a suggestion is a courtesy, never a new reason to fail."""
    try:
        found = Engine.unwrap(client.indices.get_alias())
    except CLIENT_ERRORS:
        return []
    names = {alias for entry in (found or {}).values() if isinstance(entry, dict)
             for alias in entry.get("aliases", {})}
    return sorted(name for name in names if not name.startswith("."))


def closest_alias(client: Any, name: str) -> str | None:
    """The existing alias closest to `name`, if one is close enough to be a typo of it."""
    matches = difflib.get_close_matches(name, [a for a in existing_aliases(client) if a != name], n=1, cutoff=0.6)
    return matches[0] if matches else None


def missing_advice(client: Any, name: str, otherwise: str) -> str:
    """`did you mean 'products'?` when an existing alias is close to `name`, else
    `otherwise` (the usual advice: ingest or create it first)."""
    close = closest_alias(client, name)
    return otherwise if close is None else f"did you mean {close!r}? (the closest existing alias)"
