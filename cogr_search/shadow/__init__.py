"""The shadow index (DESIGN.md section 2): CoGR's matching semantics in memory.

- `ItemIndex` (item view): keyword -> items; retrieval, BM25 ranking, shadow eval.
- `QueryView` (query view): keyword -> queries with cached per-query counts; answers
  query-side rewards (F1) and item-side counterfactual rewards (Appendix B.3).
- `save_shadow` / `load_shadow`: one pickle-free `.npz` file holding both views.

Core module: imports neither torch nor opensearch-py.
"""

from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.query_view import QueryView
from cogr_search.shadow.store import ShadowIndex, load_shadow, save_shadow

__all__ = ["ItemIndex", "QueryView", "ShadowIndex", "load_shadow", "save_shadow"]
