"""The index body (the top-level `mappings/index/`, packaged) and the names of versioned indices behind an alias.

Each alias NAME is served by concrete indices `NAME--r<round>-<n>` (DESIGN.md section 3;
`names.py` says why the `--`; earlier releases' `NAME-r<round>-<n>` are still recognised).
Every version is created with the full body from mappings/ (settings, analysis,
mappings) in the create request itself, not through an index template: a template
matching `NAME-r*` would also match the versions of an alias `NAME-rugs`, and a user's
higher-priority template could silently change what a version holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cogr_search.cluster.definitions import definition, definitions_dir
from cogr_search.cluster.names import LEGACY_VERSION_RE, VERSION_RE, check_alias, version_name

BODY_FILE = "cogr-items.json"


def mappings_dir(override: Path | None = None) -> Path:
    """`override` (a cluster's `settings.mappings_dir`, i.e. `COGR_MAPPINGS_DIR`), else the
    index body shipped in the package (the top-level `mappings/index/`, package data), so
    a wheel install finds it without a checkout."""
    if override is not None:
        return Path(override).expanduser()
    return definitions_dir() / "index"


def legacy_template_name(alias: str) -> str:
    """The index template earlier releases installed for `alias` (removed on sight)."""
    return f"cogr-{alias}"


def index_body(
    shards: int | None = None, replicas: int | None = None, *, templates: Path | None = None, **index_settings: object
) -> dict:
    """The create-index body for one version: the templates (`templates`, else the packaged
    ones) with these shard and replica counts (default: the file's) and any extra
    `index.*` settings (e.g. refresh_interval)."""
    body = definition(BODY_FILE, mappings_dir(templates))
    index = body["settings"]["index"]
    if shards is not None:
        index["number_of_shards"] = shards
    if replicas is not None:
        index["number_of_replicas"] = replicas
    index.update(index_settings)
    return body


def item_properties(templates: Path | None = None) -> dict:
    """Field mappings of an item document, for checks and for tests."""
    return index_body(templates=templates)["mappings"]["properties"]


def check_alias_name(alias: str) -> None:
    """Index names are lowercase and restricted, and an alias must not reach into another
    alias's indices (`names.check_alias`); say so before the cluster does."""
    check_alias(alias)


@dataclass(frozen=True, order=True)
class IndexVersion:
    """One concrete index behind an alias: `<alias>--r<round>-<n>`, or an earlier release's
    `<alias>-r<round>-<n>` (`legacy`), which keeps its name until it is pruned."""

    round: int
    n: int
    alias: str
    legacy: bool = False

    @property
    def name(self) -> str:
        if self.legacy:
            return f"{self.alias}-r{self.round}-{self.n}"
        return version_name(self.alias, self.round, self.n)

    @classmethod
    def parse(cls, alias: str, index_name: str) -> "IndexVersion | None":
        for pattern, legacy in ((VERSION_RE, False), (LEGACY_VERSION_RE, True)):
            match = re.match(pattern.format(alias=re.escape(alias)), index_name)
            if match:
                return cls(int(match.group(1)), int(match.group(2)), alias, legacy)
        return None


def next_version(alias: str, existing: list[str], round_: int) -> IndexVersion:
    """A fresh version name for `round_`: n is one more than any version seen so far,
    earlier releases' included."""
    versions = [v for v in (IndexVersion.parse(alias, name) for name in existing) if v]
    n = max((v.n for v in versions), default=0) + 1
    return IndexVersion(round_, n, alias)
