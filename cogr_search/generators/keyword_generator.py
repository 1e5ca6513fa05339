"""A keyword generator of one side: a backend plus the prompts and budgets it was
trained with. This is what `expand`, evaluation and serving call to turn text into a
keyword set without knowing about chat templates or parsing.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogr_search.generators.backend import EVAL, GeneratorBackend, Message, SamplingParams
from cogr_search.generators.prompts import PromptSet
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
    ) -> None:
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        self.backend = backend
        self.prompts = prompts
        self.side = side
        self.max_keywords = max_keywords
        self.k_max = k_max

    def conversation(self, value: object) -> list[Message]:
        if self.side == "query":
            text = value if isinstance(value, str) else value.text  # type: ignore[attr-defined]
            return self.prompts.query_messages(text, self.max_keywords)
        return self.prompts.item_messages(
            value.title, getattr(value, "description", "") or "", self.max_keywords  # type: ignore[attr-defined]
        )

    def generate(
        self, values: Sequence[object], params: SamplingParams = EVAL, batch_size: int = 8
    ) -> list[ParsedKeywords]:
        """Parsed keyword sets in input order. Lists keep every distinct keyword and say
        whether they are oversized; callers serving them truncate to `k_max`."""
        generations = self.backend.generate([self.conversation(v) for v in values], params, batch_size=batch_size)
        return [parse_keywords(g.text, k_max=self.k_max) for g in generations]

    def close(self) -> None:
        self.backend.close()
