"""Open a run's trained generators with the prompts and budgets the run trained them on.

The run's own `prompts.json` and `config.json` are used (never the packaged defaults),
so a model always sees the input format it learned.
"""

from __future__ import annotations

from cogr_search.errors import CogrError
from cogr_search.generators.backend_choice import load_backend
from cogr_search.generators.keyword_generator import KeywordGenerator
from cogr_search.generators.prompts import load_prompts
from cogr_search.runs.query_context import ContextSource
from cogr_search.runs.run_dir import RunDir


def open_generator(
    run: RunDir,
    side: str,
    round_: int | None = None,
    backend: str = "auto",
    dtype: str = "auto",
    context: ContextSource | None = None,
) -> tuple[KeywordGenerator, int]:
    """The `side` generator of `round_` (default: latest complete round) and that round.

    A query generator trained with search results gets the run's stored ones, and
    `context` (a live source, `workflows.context.run_context_source`) for queries the
    run has not stored."""
    round_ = run.require_round(round_)
    folder = run.checkpoint_path(round_, side)
    if not folder.is_dir():
        raise CogrError(f"run {run.name!r}: round {round_} has no {side} checkpoint ({folder})")
    config = run.config()
    generator = KeywordGenerator(
        load_backend(folder, backend, dtype=dtype),
        load_prompts(run.prompts_path),
        side,
        max_keywords=config.query_top_n if side == "query" else config.item_keywords,
        k_max=config.k_max,
        context=run.stored_context(context) if side == "query" else None,
    )
    return generator, round_
