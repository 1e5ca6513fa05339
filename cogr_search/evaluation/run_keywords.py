"""Query keywords for an evaluation from a run's trained query generator.

The evaluated queries are usually not the ones a run generated keywords for while
training (validation queries, another team's query set), so they are generated here,
with the run's own prompts and budgets and the `eval` sampling preset, into a keyword
file under `$COGR_HOME/cache/eval-keywords/`. The file name holds the run, round,
generator weights, sampling and a hash of the query texts, so a rerun reuses it and an
interrupted generation resumes (rows are appended and fsynced per batch).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cogr_search.data import Query
import time
from cogr_search.generators.backend import preset
from cogr_search.generators.batch_generate import GenerationRequest, generate_keyword_file
from cogr_search.runs.run_dir import RunDir
from cogr_search.generators.run_models import open_generator
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.serve.expander import StudentExpander


@dataclass(frozen=True)
class RunKeywords:
    path: Path
    run: str
    round: int
    model: str
    generated: int
    reused: int
    seconds: float


def _queries_hash(queries: Mapping[str, Query]) -> str:
    digest = hashlib.sha256()
    for qid in sorted(queries):
        digest.update(f"{qid}\x00{queries[qid].text}\x00".encode())
    return digest.hexdigest()[:16]


def query_keywords_from_run(
    run_name: str,
    queries: Mapping[str, Query],
    cache_dir: Path,
    round_: int | None = None,
    runs_dir: Path | None = None,
    sampling: str = "eval",
    seed: int = 0,
    backend: str = "auto",
    batch_size: int = 8,
    progress: bool = True,
    context: object = None,
) -> RunKeywords:
    """Generate (or reuse) the run's query keywords for `queries`; returns the file."""

    run = RunDir.open(run_name, runs_dir)
    round_ = run.require_round(round_)
    model = run.model_tag(round_, "query")
    path = cache_dir / f"{run.name}-r{round_}-{model.rsplit('+', 1)[-1]}-{sampling}-s{seed}-{_queries_hash(queries)}.jsonl"
    generator, round_ = open_generator(run, "query", round_, backend=backend, context=context)
    try:
        conversations = generator.conversations([q.text for q in queries.values()])
        requests = [GenerationRequest(qid, c) for qid, c in zip(queries, conversations)]
        stats = generate_keyword_file(
            generator.backend,
            requests,
            path,
            preset(sampling, seed=seed),
            batch_size=batch_size,
            k_max=generator.k_max,
            progress=progress,
            desc="query keywords",
        )
    finally:
        generator.close()
    return RunKeywords(path, run.name, round_, model, stats.generated, stats.resumed, stats.seconds)


def query_keywords_from_student(
    run_name: str,
    queries: Mapping[str, Query],
    cache_dir: Path,
    round_: int | None = None,
    runs_dir: Path | None = None,
) -> RunKeywords:
    """The run's query student's keywords for `queries`, written to a keyword file (the
    same hand-off as the LLM's; a student takes milliseconds, so nothing is reused)."""

    started = time.perf_counter()
    expander = StudentExpander(run_name, round_, runs_dir=runs_dir, sides=("query",))
    tag = expander.students.tag("query")
    path = cache_dir / f"{expander.run}-r{expander.round}-{tag.rsplit('+', 1)[-1]}-{_queries_hash(queries)}.jsonl"
    keywords = expander.expand_queries([q.text for q in queries.values()])
    write_keyword_file(path, zip(queries, keywords))
    return RunKeywords(path, expander.run, expander.round, tag, len(queries), 0, time.perf_counter() - started)
