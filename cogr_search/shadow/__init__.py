"""The shadow index (DESIGN.md section 2): CoGR's matching semantics in memory.

- `ItemIndex` (item view): keyword -> items; retrieval, BM25 ranking, shadow eval.
- `QueryView` (query view): keyword -> queries with cached per-query counts; answers
  query-side rewards (F1) and item-side counterfactual rewards (Appendix B.3).
- `save_shadow` / `load_shadow`: one pickle-free `.npz` file holding both views.

Core module: imports neither torch nor opensearch-py. The names below load on first use
(PEP 562), so that importing `cogr_search.shadow.bm25` alone, as the engine seam does for
every command, does not import numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cogr_search.shadow.index import ItemIndex
    from cogr_search.shadow.query_view import QueryView
    from cogr_search.shadow.store import ShadowIndex, load_shadow, save_shadow

_HOMES = {"ItemIndex": "index", "QueryView": "query_view", "ShadowIndex": "store", "load_shadow": "store",
          "save_shadow": "store"}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
