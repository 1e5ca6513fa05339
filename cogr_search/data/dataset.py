"""`load_dataset`: recognise a layout and a dataset, load it, and pick its relevance threshold.

How a dataset is recognised (documented in docs/evaluation.md):

1. An optional `cogr-dataset.json` next to the files:
   `{"name": ..., "relevance_threshold": ..., "layout": "beir" | "wands" | "catalog", ...}`.
   Every key is optional; a `catalog` layout also names its files and columns.
2. Otherwise the layout is detected from the file names (BEIR, then WANDS), and the name
   is the directory name.
3. The relevance threshold (relevant = score >= threshold) is, in order: the caller's
   override (`--relevance-threshold`), the JSON file's value, the WANDS layout's own
   grades (Exact + Partial), and the packaged description of a known public set whose
   files cannot carry a JSON file of their own (`homedepot`, `crowdflower`; matched by
   name and only when every label score lies on that set's scale). Anything else has no
   threshold: its items and queries load, but evaluation and training refuse it with
   the score values its labels hold, rather than guess (BEIR's "score > 0" would make
   every judged pair of a 1..3 scale relevant).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from cogr_search.data import beir, catalog, wands
from cogr_search.data.model import Dataset, Item, Query
from cogr_search.data.validate import DUPLICATE_POLICIES, LabelTable, fail, read_text
from cogr_search.errors import InputError

DATASET_FILE = "cogr-dataset.json"


@dataclass(frozen=True)
class KnownDataset:
    """What a public set's own description would say: its threshold and score scale."""

    relevance_threshold: float
    lowest_score: float
    highest_score: float
    meaning: str


KNOWN_DATASETS: dict[str, KnownDataset] = {
    "homedepot": KnownDataset(2.0, 1.0, 3.0, "mean of 3 raters, 1 (irrelevant) .. 3 (exact)"),
    "crowdflower": KnownDataset(3.0, 1.0, 4.0, "median rating 1 .. 4"),
}
"""Descriptions of the shared public sets (shared/data/README.md), by dataset name."""
KNOWN_THRESHOLDS: dict[str, float] = {name: known.relevance_threshold for name, known in KNOWN_DATASETS.items()}
_SPEC_KEYS = {"name", "relevance_threshold", "layout", "items", "queries", "labels", "description", "duplicate_labels"}
_PART_KEYS = {
    "items": {"file", "columns", "delimiter"},
    "queries": {"file", "columns"},
    "labels": {"file", "columns", "grades"},
}
Tables = tuple[dict[str, Item], dict[str, Query], LabelTable | None]


def sample_catalog_path() -> Path:
    """The `homegoods` sample catalog shipped inside the package (BEIR layout)."""
    return Path(__file__).resolve().parents[1] / "sample_data" / "homegoods"


def read_spec(directory: Path) -> dict:
    """The optional `cogr-dataset.json`, checked for unknown keys (typos fail loudly)."""
    path = directory / DATASET_FILE
    if not path.is_file():
        return {}
    try:
        spec = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise fail(path, err.lineno, f"invalid JSON ({err.msg})") from None
    if not isinstance(spec, dict):
        raise fail(path, 1, "expected a JSON object")
    unknown = sorted(set(spec) - _SPEC_KEYS)
    if unknown:
        raise fail(path, None, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_SPEC_KEYS))})")
    for part, allowed in _PART_KEYS.items():
        if part in spec:
            if not isinstance(spec[part], dict) or "file" not in spec[part]:
                raise fail(path, None, f"key {part!r}: expected an object with a 'file'")
            extra = sorted(set(spec[part]) - allowed)
            if extra:
                raise fail(path, None, f"key {part!r}: unknown key {extra[0]!r}")
    threshold = spec.get("relevance_threshold")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
        raise fail(path, None, f"key 'relevance_threshold': expected a number, got {threshold!r}")
    if spec.get("duplicate_labels") not in (None, *DUPLICATE_POLICIES):
        raise fail(path, None, f"key 'duplicate_labels': expected one of {', '.join(DUPLICATE_POLICIES)}")
    if spec.get("layout") not in (None, "beir", "wands", "catalog"):
        raise fail(path, None, f"key 'layout': expected beir, wands or catalog, got {spec['layout']!r}")
    return spec


def _read_catalog_layout(directory: Path, spec: dict, duplicates: str) -> Tables:
    if "items" not in spec:
        raise InputError(f"{directory / DATASET_FILE}: layout 'catalog' needs an 'items' entry")
    part = spec["items"]
    cols = part.get("columns", {})
    mapping = catalog.ColumnMapping(id=cols.get("id", "id"), title=cols.get("title", "title"), description=cols.get("description"))
    items = catalog.read_items(directory / part["file"], mapping, part.get("delimiter"))
    queries: dict[str, Query] = {}
    labels: LabelTable | None = None
    if "queries" in spec:
        q_cols = spec["queries"].get("columns", {})
        queries = catalog.read_queries(directory / spec["queries"]["file"], q_cols.get("id", "id"), q_cols.get("text", "text"))
    if "labels" in spec:
        if not queries:
            raise InputError(f"{directory / DATASET_FILE}: 'labels' given without 'queries'")
        l_cols = spec["labels"].get("columns", {})
        labels = catalog.read_labels(
            directory / spec["labels"]["file"],
            queries,
            items,
            l_cols.get("query", "query_id"),
            l_cols.get("item", "item_id"),
            l_cols.get("score", "score"),
            spec["labels"].get("grades"),
            duplicates,
        )
    return items, queries, labels


def detect_layout(directory: Path, spec: dict) -> str:
    if spec.get("layout"):
        return spec["layout"]
    if beir.is_beir(directory):
        return "beir"
    if wands.is_wands(directory):
        return "wands"
    present = ", ".join(sorted(p.name for p in directory.iterdir())[:8]) or "nothing"
    raise InputError(
        f"{directory}: not a dataset: expected BEIR files (corpus.jsonl, queries.jsonl, qrels.tsv), "
        f"WANDS files (product.csv, query.csv, label.csv) or a {DATASET_FILE}; found {present}"
    )


def score_values(labels: dict[str, dict[str, float]], shown: int = 8) -> str:
    """The distinct label scores with their counts, for messages: `0 (120), 1 (40), 2 (8)`."""
    counts = Counter(score for graded in labels.values() for score in graded.values())
    values = sorted(counts)
    text = ", ".join(f"{v:g} ({counts[v]})" for v in values[:shown])
    return text + (f", ... ({len(values) - shown} more values)" if len(values) > shown else "")


def default_threshold(
    directory: Path, name: str, layout: str, labels: dict[str, dict[str, float]]
) -> tuple[float | None, str]:
    """(threshold, where it came from) when neither the caller nor the JSON file set one;
    (None, the refusal) when nothing describes the labels."""
    if layout == "wands":
        return wands.RELEVANCE_THRESHOLD, "WANDS Exact+Partial"
    if not labels:
        return None, f"{directory}: the dataset has no labels"
    scores = {score for graded in labels.values() for score in graded.values()}
    known = KNOWN_DATASETS.get(name)
    if known is not None:
        if known.lowest_score <= min(scores) and max(scores) <= known.highest_score:
            return known.relevance_threshold, f"known dataset {name!r} ({known.meaning})"
        return None, (
            f"{directory}: named {name!r}, but its label scores ({score_values(labels)}) are not on that set's "
            f"scale ({known.meaning}); set relevance_threshold in {directory / DATASET_FILE} or pass --relevance-threshold X"
        )
    return None, (
        f"{directory}: no relevance threshold: its label scores are {score_values(labels)}; "
        f"set relevance_threshold in {directory / DATASET_FILE} or pass --relevance-threshold X (relevant = score >= X)"
    )


def load_dataset(
    path: Path | str,
    relevance_threshold: float | None = None,
    columns: catalog.ColumnMapping | None = None,
    duplicate_labels: str | None = None,
) -> Dataset:
    """Load a dataset directory (BEIR, WANDS or described catalog) or a plain catalog file.

    A single CSV/TSV/JSONL file is a catalog with items only (no queries), read with
    `columns`. Any malformed input raises `InputError` naming file, line and field.
    Repeated (query, item) judgements are merged by `duplicate_labels` (default: the
    JSON file's `duplicate_labels`, else `mean`); `error` rejects them.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_file():
        if not catalog.is_catalog_file(path):
            raise InputError(f"{path}: expected a dataset directory or a .csv, .tsv or .jsonl catalog file")
        items = catalog.read_items(path, columns or catalog.ColumnMapping())
        threshold = 1.0 if relevance_threshold is None else float(relevance_threshold)
        return Dataset(items, {}, {}, threshold, path.stem.lower(), path, "catalog", "default")
    spec = read_spec(path)
    layout = detect_layout(path, spec)
    duplicates = duplicate_labels or spec.get("duplicate_labels") or "mean"
    table: LabelTable | None
    if layout == "beir":
        items, queries, table = beir.read_beir(path, duplicates)
    elif layout == "wands":
        items, queries, table = wands.read_wands(path, duplicates)
    else:
        items, queries, table = _read_catalog_layout(path, spec, duplicates)
    labels = table.result() if table else {}
    notes = tuple(n for n in [table.note() if table else None] if n)
    name = str(spec.get("name") or path.resolve().name).lower()
    if relevance_threshold is not None:
        threshold, source = float(relevance_threshold), "--relevance-threshold"
    elif spec.get("relevance_threshold") is not None:
        threshold, source = float(spec["relevance_threshold"]), DATASET_FILE
    else:
        threshold, source = default_threshold(path, name, layout, labels)
    if threshold is None:
        return Dataset(items, queries, labels, None, name, path, layout, "none", notes, missing_threshold=source)
    return Dataset(items, queries, labels, threshold, name, path, layout, source, notes)
