"""The keyword-expanded OpenSearch query (DESIGN.md section 3), built in one place.

Evaluation, serving and the parity tests all send this query, so the retrieved set in
OpenSearch is exactly the shadow index's `I_ret(q)`:

- `filter: terms(cogr_keywords: S_q ∪ {q})` selects the items sharing at least one
  exact (normalized) keyword with the query, and scores nothing;
- `should: match(cogr_keywords.text: " ".join(S_q ∪ {q}))` ranks them by BM25 over
  the analyzed keyword bags. With a filter present, the should clause is optional, so
  it changes the order, never the set.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogr_search.cluster.documents import KEYWORDS as KEYWORD_FIELD
from cogr_search.cluster.documents import KEYWORDS_TEXT as TEXT_FIELD


def keyword_query(keywords: Sequence[str], filters: list[dict] | None = None) -> dict:
    """The `query` body for a query representation `S_q ∪ {q}` (normalized keywords).

    Build the representation with `cogr_search.keywords.representation(S_q, q)`.
    `filters` are extra caller filters (e.g. `{"term": {"brand": "acme"}}`) that
    restrict the retrieved set further. An empty representation retrieves nothing.
    """
    keywords = list(keywords)
    bool_query: dict = {"filter": [{"terms": {KEYWORD_FIELD: keywords}}, *(filters or [])]}
    text = " ".join(keywords)
    if text:
        bool_query["should"] = [{"match": {TEXT_FIELD: text}}]
    return {"bool": bool_query}
