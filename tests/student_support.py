"""A run whose round 0 holds keyword files but no generators, for the student tests.

Students are fitted from a round's keyword files only, and keyword files may come from
anywhere (DESIGN.md section 6), so these tests write them directly rather than spend
minutes of SFT and generation on 2 shared cores. The "teacher" here is a fixed rule a
student can learn from text: an item's keywords are its title's word pairs and last
word, a query's are its word pairs and words. The round records made-up weight digests,
since no checkpoint exists (nothing here loads an LLM).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.runs.run_dir import RunDir, atomic_write_json

VECTORS = Path(__file__).parent / "vectors" / "normalize.jsonl"
WORD = re.compile(r"[A-Za-z0-9]+")


def teacher_keywords(text: str, last_word: bool) -> list[str]:
    """Word pairs (as written: the student must normalize them) and the last word or all words."""
    words = WORD.findall(text)
    keywords = [f"{a} {b}" for a, b in zip(words, words[1:])]
    keywords += words[-1:] if last_word else words
    return keywords


def vector_inputs() -> list[str]:
    """Inputs of the normalizer's shared test vectors (the Java port's too) that normalize
    to a non-empty keyword: written into teacher sets as-is."""
    cases = [json.loads(line) for line in VECTORS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c["input"] for c in cases if c["expected"]]


def make_keyword_run(runs_dir: Path, name: str = "students", labelled_fraction: float = 0.75, k_max: int = 30,
                     data: Path | None = None) -> RunDir:
    """Round 0 of a run on `data` (default: the sample catalog): config, split, item
    keywords for the first `labelled_fraction` of the items, query keywords for every
    query (train and val)."""
    data = data or sample_catalog_path()
    dataset = load_dataset(data)
    run = RunDir.create(name, runs_dir)
    run.write_config({"data": str(data), "model": "none", "k_max": k_max, "val_fraction": 0.25})
    train, val = dataset.split(0.25, 0)
    items = sorted(dataset.items)
    atomic_write_json(run.split_path, {"train_queries": list(train.queries), "val_queries": list(val.queries),
                                       "items": items})
    labelled = items[: round(len(items) * labelled_fraction)]
    vectors = vector_inputs()
    item_rows = []
    for n, item_id in enumerate(labelled):
        keywords = teacher_keywords(dataset.items[item_id].title, last_word=True)
        keywords.append(vectors[n % len(vectors)])  # raw, un-normalized keywords from "elsewhere"
        item_rows.append((item_id, keywords))
    write_keyword_file(run.item_keywords_path(0), item_rows)
    write_keyword_file(run.query_keywords_path(0),
                       ((q.id, teacher_keywords(q.text, last_word=False)) for q in dataset.queries.values()))
    run.mark_done("split")
    run.mark_done("round-0", weights_sha256={"query": "a" * 64, "item": "b" * 64}, phase="keyword files")
    return run
