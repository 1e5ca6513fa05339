"""The engine-facing JSON of the project's top-level `mappings/` folder, as the package ships it.

Why one folder and one reader: a search team reviews and applies index bodies, pipelines
and roles with its own tooling, so they are files, not Python literals; cogr-search reads
the same files (package data: `cogr_search/mappings` is that folder), fills in the few
values known only at run time (``"${name}"`` strings), and sends them.

    index/cogr-items.json           settings, analysis and mappings of every version
    pipelines/cogr-title-keyword-v1.json, cogr-ingest.json, cogr.json
    security/opensearch-roles.json, elasticsearch-roles.json   ({alias} filled in)
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from cogr_search.errors import CogrError

_PLACEHOLDER = re.compile(r"^\$\{([a-z_]+)\}$")


def definitions_dir() -> Path:
    """The packaged `mappings/` folder."""
    return Path(str(resources.files("cogr_search") / "mappings"))


def definition(relative: str, root: Path | None = None) -> dict:
    """A fresh copy of one definition (``root``, else the packaged folder), without its
    `_comment`, which the engines would refuse."""
    return copy.deepcopy(_read(Path(root or definitions_dir()) / relative))


@lru_cache(maxsize=16)
def _read(path: Path) -> dict:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CogrError(f"{path}: cannot read the definition ({err})") from err
    body.pop("_comment", None)
    return body


def fill(body: Any, values: dict[str, Any]) -> Any:
    """``body`` with every string that is exactly ``"${name}"`` replaced by ``values[name]``
    (its type kept: a batch size stays a number); a name without a value is refused."""
    if isinstance(body, dict):
        return {key: fill(value, values) for key, value in body.items()}
    if isinstance(body, list):
        return [fill(value, values) for value in body]
    match = _PLACEHOLDER.match(body) if isinstance(body, str) else None
    if match is None:
        return body
    if match.group(1) not in values:
        raise CogrError(f"definition placeholder ${{{match.group(1)}}} has no value")
    return values[match.group(1)]
