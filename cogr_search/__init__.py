"""cogr-search: co-evolving generative keyword retrieval (CoGR) on OpenSearch.

The core modules (`keywords`, `shadow`, `metrics`, `data`) import neither torch nor
opensearch-py, so a serving or sync host needs no ML stack; see docs/architecture.md.
"""

__version__ = "0.1.0"
