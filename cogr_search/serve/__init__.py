"""Serving a trained run to existing search apps (DESIGN.md section 5).

- `client.CogrSearch`: the Python API an app calls: expand a query (LRU-cached), build
  the keyword-expanded OpenSearch query with the app's filters, search the alias, and
  explain per hit which keywords matched.
- `app`: the HTTP expansion service (`cogr-search serve`), used by apps and by the
  OpenSearch plugin; its module docstring is the HTTP contract.
- `enrich`: client-side enrichment at ingest (`cogr-search ingest --enrich --run RUN`).

Nothing here imports torch at module import: a host that only calls a remote service
(`--service URL`) needs no ML stack.
"""
