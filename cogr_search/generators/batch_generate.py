"""Bulk keyword generation into a JSONL keyword file that survives crashes.

Each batch's rows are appended and fsynced before the next batch starts, so a crash
loses at most the batch in flight. Re-running with the same output file skips the ids
already there (a line cut short by the crash is dropped first), which is what lets a
Phase 1 run or an index rebuild resume instead of starting over.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.generators.backend import Generation, GeneratorBackend, Message, SamplingParams
from cogr_search.generators.batch_plan import pending_batches, plan_batches, prompt_length, rank_batches
from cogr_search.generators.prompts import PromptSet
from cogr_search.runs.query_context import ContextSource
from cogr_search.runs.keyword_files import append_keyword_rows, read_keyword_file, write_keyword_file
from cogr_search.ranks import Ranks
from cogr_search.keywords import DEFAULT_K_MAX, parse_keywords
from cogr_search.progress import progress_bar
from cogr_search.generators.backend_choice import load_backend


@dataclass(frozen=True)
class GenerationRequest:
    """One id and the conversation that asks for its keywords."""

    id: str
    conversation: list[Message]


FirstBatch = Callable[[Sequence[GenerationRequest], float, Sequence[GenerationRequest]], None]
"""`on_first_batch(done, seconds, left)`: the first batch's requests, its seconds, the rest."""


@dataclass
class GenerationStats:
    """What one call did; `resumed` rows were already in the file and not regenerated."""

    requested: int = 0
    resumed: int = 0
    generated: int = 0
    empty: int = 0
    oversized: int = 0
    tokens: int = 0
    seconds: float = 0.0
    empty_ids: list[str] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {
            "requested": self.requested,
            "resumed": self.resumed,
            "generated": self.generated,
            "empty": self.empty,
            "oversized": self.oversized,
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "tokens_per_s": round(self.tokens_per_s, 2),
        }


def generate_keyword_file(
    backend: GeneratorBackend,
    requests: Sequence[GenerationRequest],
    out_path: Path,
    params: SamplingParams,
    batch_size: int = 8,
    keep: int | None = None,
    k_max: int = DEFAULT_K_MAX,
    progress: bool = True,
    desc: str = "generating",
    on_raw: Callable[[str, str], None] | None = None,
    ranks: Ranks | None = None,
    on_first_batch: FirstBatch | None = None,
) -> GenerationStats:
    """Generate keywords for every request not yet in `out_path`, appending as it goes.

    `keep` truncates each parsed list (Phase 1 keeps the first M item keywords); without
    it lists are cut at `k_max`, the serving cap. `on_raw(id, text)` sees raw outputs
    (used to record fixtures and debug prompts). `on_first_batch(done, seconds, left)`
    hears the first batch's requests, how long they took and the requests still to do:
    what a long step's time estimate is made from (on rank 0, for all ranks' first round).

    With several `ranks`, every rank forms the same batches from the whole request list
    (`batch_plan`: longest prompt first) and generates whole batches of its own; rank 0
    alone appends every batch round's rows. A row meets the same batch whatever the
    number of processes or wherever a resume starts, and a seeded request samples with a
    seed of its own (`row_seed`), so the file is byte for byte the same for any N (the
    finished file is rewritten in request order). The batch size does change it.
    """
    ranks = ranks or Ranks()
    done = ranks.broadcast(existing_ids(out_path) if ranks.is_main else None)
    todo = [r for r in requests if r.id not in done]
    stats = GenerationStats(requested=len(requests), resumed=len(requests) - len(todo))
    if not todo:
        if ranks.is_main and out_path.exists():
            _rewrite_in_request_order(out_path, requests)  # a crash may have come just before it
        ranks.barrier()
        return stats
    length = prompt_length(backend)
    plan = plan_batches([length(r.conversation) for r in requests], batch_size)
    mine = rank_batches(pending_batches(plan, [r.id for r in requests], done), ranks.rank, ranks.world)
    limit = keep if keep is not None else k_max
    bar = progress_bar(len(requests), desc, "row", progress and ranks.is_main, initial=stats.resumed)
    start = time.perf_counter()
    try:
        for round_ in range(ranks.broadcast(len(mine))):  # rank 0 holds the most batches
            # every rank takes part in every round, with an empty batch once its share is done
            batch = mine[round_] if round_ < len(mine) else []
            generated = _generate_batch(backend, [requests[i] for i in batch], params)
            rows = _parse_batch(generated, done, stats, limit, k_max, on_raw)
            ordered = [row for part in ranks.gather(rows) for row in part]
            if ranks.is_main and ordered:
                out_path.parent.mkdir(parents=True, exist_ok=True)
                append_keyword_rows(out_path, ordered)
            if on_first_batch is not None and ranks.is_main and stats.generated == 0 and ordered:
                first = {row_id for row_id, _ in ordered}
                on_first_batch([r for r in todo if r.id in first], time.perf_counter() - start,
                               [r for r in todo if r.id not in first])
            stats.generated += len(ordered)
            bar.update(len(ordered))
    finally:
        stats.seconds = time.perf_counter() - start
        bar.close()
    _add_other_ranks(stats, ranks)
    if ranks.is_main:
        _rewrite_in_request_order(out_path, requests)
    ranks.barrier()
    return stats


def _generate_batch(
    backend: GeneratorBackend, batch: Sequence[GenerationRequest], params: SamplingParams
) -> list[tuple[GenerationRequest, Generation]]:
    """One planned batch, handed to the engine as one batch (its size is the batch's), each
    row with its own seed when the run is seeded."""
    if not batch:
        return []
    seeds = None if params.seed is None else [row_seed(params.seed, r.id) for r in batch]
    parts = backend.iter_batches([r.conversation for r in batch], params, batch_size=len(batch), row_seeds=seeds)
    return [(batch[index], generation) for part in parts for index, generation in part]


def _parse_batch(
    generated: Sequence[tuple[GenerationRequest, Generation]],
    done: Collection[str],
    stats: GenerationStats,
    limit: int,
    k_max: int,
    on_raw: Callable[[str, str], None] | None,
) -> list[tuple[str, list[str]]]:
    """One batch's (id, keywords) rows, counting empty and oversized outputs and tokens;
    rows already in the file (`done`: a batch a crash cut short) are left out."""
    rows = []
    for request, generation in generated:
        if request.id in done:
            continue
        if on_raw is not None:
            on_raw(request.id, generation.text)
        parsed = parse_keywords(generation.text, k_max=k_max)
        stats.oversized += int(parsed.oversized)
        if not parsed.keywords:
            stats.empty += 1
            stats.empty_ids.append(request.id)
        stats.tokens += generation.n_tokens
        rows.append((request.id, parsed.keywords[:limit]))
    return rows


def _add_other_ranks(stats: GenerationStats, ranks: Ranks) -> None:
    """Count the other ranks' empty, oversized and token figures into this rank's `stats`."""
    if not ranks.distributed:
        return
    mine = (stats.empty, stats.oversized, stats.tokens, stats.empty_ids)
    everyone = ranks.gather(mine)
    stats.empty = sum(e for e, _, _, _ in everyone)
    stats.oversized = sum(o for _, o, _, _ in everyone)
    stats.tokens = sum(t for _, _, t, _ in everyone)
    stats.empty_ids = [i for _, _, _, ids in everyone for i in ids]


def _rewrite_in_request_order(path: Path, requests: Sequence[GenerationRequest]) -> None:
    """Put the rows in request order (ids outside `requests` last, as they were), so the
    file does not depend on batching, sharding or where a crash cut a run short."""
    rows = read_keyword_file(path)
    asked = [r.id for r in requests if r.id in rows]
    listed = set(asked)
    order = asked + [i for i in rows if i not in listed]
    if order != list(rows):
        write_keyword_file(path, ((i, rows[i]) for i in order))


def row_seed(seed: int, row_id: str) -> int:
    """The sampling seed of one request: a function of the run's seed and the id alone,
    so a row samples from the same random stream in whichever process it lands (its
    batch, the other half of what it samples, is fixed by `batch_plan`)."""
    digest = hashlib.blake2b(f"{seed}\0{row_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & (2**63 - 1)


def generate_with_model(
    model: Path,
    requests: Sequence[GenerationRequest],
    out_path: Path,
    params: SamplingParams,
    *,
    backend: str = "auto",
    dtype: str = "auto",
    batch_size: int = 32,
    keep: int | None = None,
    k_max: int = DEFAULT_K_MAX,
    progress: bool = True,
    desc: str = "generating",
    ranks: Ranks | None = None,
    on_first_batch: FirstBatch | None = None,
) -> dict:
    """Load the model folder, fill `out_path` for `requests` (resumably), unload it.

    Returns the generation figures plus `backend`, `rows` (lines in the file) and
    `empty_rows` (requests whose output parsed to no keyword): what a run records."""
    with load_backend(model, backend, dtype=dtype) as engine:
        stats = generate_keyword_file(
            engine, requests, out_path, params, batch_size=batch_size, keep=keep, k_max=k_max,
            progress=progress, desc=desc, on_first_batch=on_first_batch, ranks=ranks,
        )
    rows = read_keyword_file(out_path)
    empty = sum(1 for r in requests if not rows.get(r.id))
    return {**stats.as_dict(), "backend": engine.name, "rows": len(rows), "empty_rows": empty}


def existing_ids(path: Path) -> set[str]:
    """Ids already written to a keyword file, after dropping a crash-truncated tail."""
    if not path.exists():
        return set()
    drop_partial_tail(path)
    return set(read_keyword_file(path, tolerate_partial_tail=True))


def drop_partial_tail(path: Path) -> bool:
    """Cut the file back to its last newline; True when something was cut.

    A crash in the middle of a write leaves a last line without its newline; appending
    after it would glue the next row onto garbage, so it goes before any append.
    """
    size = path.stat().st_size
    if size == 0:
        return False
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return False
        keep = _last_newline_end(handle, size)
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    return True


def _last_newline_end(handle, size: int) -> int:  # noqa: ANN001 - binary file
    """Offset just past the last b'\\n' (0 when there is none), scanning backwards."""
    block = 65536
    pos = size
    while pos > 0:
        start = max(0, pos - block)
        handle.seek(start)
        data = handle.read(pos - start)
        found = data.rfind(b"\n")
        if found != -1:
            return start + found + 1
        pos = start
    return 0


def item_requests(
    prompts: PromptSet, items: Iterable[object], max_keywords: int, few_shot: bool = False
) -> list[GenerationRequest]:
    """One request per item (anything with `id`, `title`, `description`)."""
    return [
        GenerationRequest(
            item.id, prompts.item_messages(item.title, getattr(item, "description", "") or "", max_keywords, few_shot)
        )
        for item in items
    ]


def query_requests(
    prompts: PromptSet,
    queries: Iterable[object],
    max_keywords: int,
    few_shot: bool = False,
    context: ContextSource | None = None,
) -> list[GenerationRequest]:
    """One request per query (anything with `id` and `text`), with each query's search
    results in the prompt when the run was trained with them (`context`)."""
    queries = list(queries)
    titles = context([q.text for q in queries]) if context else [None] * len(queries)
    return [
        GenerationRequest(q.id, prompts.query_messages(q.text, max_keywords, few_shot, context=t))
        for q, t in zip(queries, titles)
    ]
