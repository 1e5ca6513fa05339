"""Catalogs, queries and graded labels: loading (BEIR, WANDS, plain CSV/JSONL), strict
validation, relevance thresholds and query-dimension splits. No torch, no OpenSearch."""

from cogr_search.data.catalog import ColumnMapping
from cogr_search.data.dataset import DATASET_FILE, KNOWN_THRESHOLDS, load_dataset, sample_catalog_path
from cogr_search.data.model import Dataset, Item, Query
from cogr_search.data.split import EvalSplit, choose_split

__all__ = [
    "DATASET_FILE",
    "KNOWN_THRESHOLDS",
    "ColumnMapping",
    "Dataset",
    "EvalSplit",
    "Item",
    "Query",
    "choose_split",
    "load_dataset",
    "sample_catalog_path",
]
