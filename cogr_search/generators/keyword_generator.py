"""A keyword generator of one side: a backend plus the prompts and budgets it was
trained with. This is what `expand`, evaluation and serving call to turn text into a
keyword set without knowing about chat templates or parsing.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogr_search.generators.backend import EVAL, GeneratorBackend, Message, SamplingParams
from cogr_search.generators.prompts import PromptSet
from cogr_search.runs.query_context import ContextSource
from cogr_search.keywords import DEFAULT_K_MAX, ParsedKeywords, parse_keywords

SIDES = ("query", "item")


class KeywordGenerator:
    """Generates parsed keyword sets for queries (strings) or items (`id/title/description`)."""

    def __init__(
        self,
        backend: GeneratorBackend,
        prompts: PromptSet,
        side: str,
        max_keywords: int,
        k_max: int = DEFAULT_K_MAX,
        context: ContextSource | None = None,
    ) -> None:
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        self.backend = backend
        self.prompts = prompts
        self.side = side
        self.max_keywords = max_keywords
        self.k_max = k_max
        self.context = context  # search results for the query prompt (runs with query_context)

    def conversations(self, values: Sequence[object]) -> list[list[Message]]:
        """The prompts for a batch; a query side with search results fetches them for the
        whole batch at once (one `_msearch`)."""
        if self.side == "query":
            texts = [v if isinstance(v, str) else v.text for v in values]  # type: ignore[attr-defined]
            titles = self.context(texts) if self.context else [None] * len(texts)
            return [self.prompts.query_messages(t, self.max_keywords, context=c) for t, c in zip(texts, titles)]
        return [
            self.prompts.item_messages(v.title, getattr(v, "description", "") or "", self.max_keywords)  # type: ignore[attr-defined]
            for v in values
        ]

    def generate(
        self, values: Sequence[object], params: SamplingParams = EVAL, batch_size: int = 8
    ) -> list[ParsedKeywords]:
        """Parsed keyword sets in input order. Lists keep every distinct keyword and say
        whether they are oversized; callers serving them truncate to `k_max`."""
        generations = self.backend.generate(self.conversations(values), params, batch_size=batch_size)
        return [parse_keywords(g.text, k_max=self.k_max) for g in generations]

    def close(self) -> None:
        self.backend.close()
