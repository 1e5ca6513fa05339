"""`cogr-search data subset`: a smaller real data set written as a BEIR folder, cut by
seeded queries (`--queries`) or to a training run's catalog (`--run`).

Why here, above runs/: the run's catalog is in its `split.json`, which data/ cannot read.
"""

from __future__ import annotations

from pathlib import Path

from cogr_search.atomic import check_writable
from cogr_search.data import load_dataset
from cogr_search.data.subset import catalog_subset, judged_subset, write_beir
from cogr_search.errors import CogrError, InputError
from cogr_search.runs.run_dir import RunDir, read_json


def write_subset(source: Path, out: Path, n_queries: int | None = None, seed: int = 0, run: str | None = None,
                 runs_dir: Path | None = None) -> dict:
    """Write the subset to `out` and return its summary (what `--json` prints)."""
    if out.resolve() == source.resolve():
        raise InputError(f"--out {out}: is SOURCE; the subset would overwrite the data set it is cut from")
    if (n_queries is None) == (run is None):
        raise InputError("data subset: give --queries N (seeded queries and their judged items) or --run RUN "
                         "(the run's catalog), one of the two")
    full = load_dataset(source)
    if run is None:
        part = judged_subset(full, n_queries, seed)  # type: ignore[arg-type]
        description = f"subset of {source.resolve()}: {n_queries} queries (seed {seed}) and every item judged for them"
    else:
        run_dir = RunDir.open(run, runs_dir)
        if not run_dir.split_path.is_file():
            raise CogrError(f"run {run_dir.name!r} has no {run_dir.split_path}: its split step has not run yet")
        items = read_json(run_dir.split_path).get("items")
        if not isinstance(items, list) or not items:
            raise InputError(f"{run_dir.split_path}: field 'items': expected the run's item ids")
        part = catalog_subset(full, items, f"{full.name}-{run_dir.name}-catalog")
        description = (f"the catalog of run {run_dir.name!r} ({len(items)} items of {source.resolve()}) with every query; "
                       f"score BM25 on it with `eval --data {source} --run {run_dir.name}`, whose labels also count "
                       "relevant items outside this catalog, as the run's own metrics do")
    check_writable(out / "corpus.jsonl")
    write_beir(part, out, description)
    return {"out": str(out), "name": part.name, "queries": len(part.queries), "items": len(part.items),
            "judged_pairs": sum(len(g) for g in part.labels.values()),
            "relevant_pairs": sum(len(r) for r in part.relevant().values()),
            "relevance_threshold": part.relevance_threshold}
