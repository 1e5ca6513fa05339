"""Deprecated: the cluster layer moved to `cogr_search.cluster` (both engines), the local
node launcher to `cogr_search.localnode`, enrichment to `cogr_search.workflows.enrich`.

Kept for one release so that `import cogr_search.opensearch.sync` (and the other module
paths) in users' code goes on working, with a DeprecationWarning that names the new path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

_MOVED = {"local_node": "cogr_search.localnode"}
_PREFIX = __name__ + "."

warnings.warn(
    "cogr_search.opensearch is deprecated: import cogr_search.cluster (and cogr_search.localnode for the local node)",
    DeprecationWarning,
    stacklevel=2,
)


def _new_name(old: str) -> str:
    tail = old[len(_PREFIX):]
    head = tail.split(".", 1)[0]
    if head in _MOVED:
        return _MOVED[head] + tail[len(head):]
    return "cogr_search.cluster." + tail


class _Redirect(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `cogr_search.opensearch.X` to the module object of its new home."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001, ANN201 - importlib protocol
        if not fullname.startswith(_PREFIX):
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):  # noqa: ANN001, ANN201
        new = _new_name(spec.name)
        warnings.warn(f"{spec.name} is deprecated: import {new}", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:  # noqa: ANN001 - already executed at its new name
        pass


if not any(isinstance(f, _Redirect) for f in sys.meta_path):
    sys.meta_path.insert(0, _Redirect())


def __getattr__(name: str):  # noqa: ANN202 - `from cogr_search.opensearch import sync`
    return importlib.import_module(f"{_PREFIX}{name}")
