"""The names cogr-search gives the indices of an alias, and which aliases it accepts.

Why: the shipped roles (`security roles`) grant a writer the alias and the indices whose
names only that alias can produce, so the names must not overlap. Every index that belongs
to alias `A` is named `A--<suffix>`: its versions `A--r<round>-<n>` and its sync lease
`A--sync-lease`. An alias may not contain `--` nor end in `-`, so the first `--` of such a
name ends the alias: `shop--*` matches no index of `shop-eu` or `shop-retail`, and a role
pattern `A--*` grants exactly `A`'s own indices.

Earlier releases named versions `A-r<round>-<n>` (a prefix of `shop-retail-r0-1` as well)
and kept every lease in one shared index `cogr-sync-leases`. Such versions are still read,
synced from, listed and pruned (`LEGACY_VERSION_RE`); new versions get the new name.
An alias that looks like an earlier release's version name (`shop-r0-1`) is refused, so
that the legacy pattern of one alias cannot name another alias either.
"""

from __future__ import annotations

import re

from cogr_search.errors import CogrError

SEPARATOR = "--"
LEGACY_LEASE_INDEX = "cogr-sync-leases"
"""The lease index of earlier releases, shared by every alias (no longer written)."""
STUDENT_INDEX = "cogr-students"
"""The plugin's model index (cluster/student_store.py): an alias of this name would give its
reader role the stored students, which only the plugin and the deploying writer may read."""
VERSION_RE = r"^{alias}--r(\d+)-(\d+)$"
LEGACY_VERSION_RE = r"^{alias}-r(\d+)-(\d+)$"
_CHARS_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_LEGACY_SHAPE_RE = re.compile(r"-r\d+-\d+$")
MAX_ALIAS_LENGTH = 200


def alias_problem(alias: str) -> str | None:
    """Why `alias` cannot be one of cogr-search's aliases, or None if it can."""
    if not _CHARS_RE.match(alias) or len(alias) > MAX_ALIAS_LENGTH:
        return "use lowercase letters, digits, '-', '_' or '.', not starting with '-', '_' or '.'"
    if SEPARATOR in alias or alias.endswith("-"):
        return (f"'{SEPARATOR}' (and a trailing '-') separates an alias from its own indices ({alias}--r0-1, "
                f"{alias}--sync-lease), so another alias's indices would match its pattern; choose a name without it")
    if _LEGACY_SHAPE_RE.search(alias):
        return "it has the shape of an index version of earlier releases (NAME-r<round>-<n>); choose another name"
    if alias == LEGACY_LEASE_INDEX:
        return "it is the sync lease index of earlier releases; choose another name"
    if alias == STUDENT_INDEX:
        return "it is the index of the students stored for the plugin; choose another name"
    return None


def check_alias(alias: str, flag: str = "--index") -> None:
    """Refuse, in one line naming `flag`, an alias whose indices could collide with another's."""
    problem = alias_problem(alias)
    if problem is not None:
        raise CogrError(f"{flag} {alias!r}: {problem}")


def version_name(alias: str, round_: int, n: int) -> str:
    return f"{alias}{SEPARATOR}r{round_}-{n}"


def versions_wildcard(alias: str) -> str:
    """The index expression that lists the alias's versions (and nothing of another alias's)."""
    return f"{alias}{SEPARATOR}r*"


def legacy_versions_wildcard(alias: str) -> str:
    """Earlier releases' versions of the alias. `A-r*` also matches every index of `A-rugs`:
    its own (`A-rugs--...`) are excluded here (OpenSearch's security refuses a wildcard that
    reaches an index the user may not see), and the rest is filtered by `LEGACY_VERSION_RE`."""
    return f"{alias}-r*,-*{SEPARATOR}*"


def lease_index(alias: str) -> str:
    """The index holding the alias's sync lease: one per alias, so a role can grant a writer
    its own alias's lease and no other's."""
    return f"{alias}{SEPARATOR}sync-lease"


def own_indices_pattern(alias: str) -> str:
    """The role pattern of every index that belongs to `alias` (versions and lease)."""
    return f"{alias}{SEPARATOR}*"


def legacy_versions_regex(alias: str) -> str:
    """A role pattern (both engines' `/regex/` syntax, a whole-name match) of exactly the
    earlier releases' versions of `alias`: `A-r<digits>-<digits>`, which no other accepted
    alias's versions match."""
    return "/" + alias.replace(".", "\\.") + "-r[0-9]+-[0-9]+/"
