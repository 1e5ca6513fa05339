"""CoGR's two rewards as trl reward functions over the shadow index.

trl calls a reward function as `f(prompts=..., completions=..., **columns)` with one
value per completion, every dataset column passed by name (paper Eq. 2.2 and 2.3):

- `QueryF1Reward`: the dataset has a `query_id` column; each completion is parsed into
  a keyword set and rewarded with F_beta of what it retrieves from the frozen item
  index (0 when oversized), plus R4T's diversity term when weighted (`diversity.py`).
- `ItemMarginalReward`: the dataset has an `item_id` column; each completion is the
  item's candidate keyword set, rewarded with the change in total query F_beta it
  causes against the frozen query view (-1 when oversized), or with the transposed
  item-centric F (paper Table 3) when asked.

Both keep the seconds they spend, so `bench rl` can say what share of a GRPO step the
rewards cost. Neither imports torch: they are plain callables over numpy views.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from cogr_search.keywords import DEFAULT_K_MAX, ParsedKeywords, parse_keywords
from cogr_search.shadow.query_view import QueryView
from cogr_search.training.diversity import KeywordEmbeddings


def completion_text(completion: object) -> str:
    """The text of one trl completion: a string, or a chat turn list (last turn's content)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"unexpected completion of type {type(completion).__name__}")


class _ShadowReward:
    """Shared parsing and bookkeeping; subclasses score parsed sets against the view."""

    __name__ = "cogr_reward"

    def __init__(self, view: QueryView, beta: float = 1.0, k_max: int = DEFAULT_K_MAX) -> None:
        self.view = view
        self.beta = beta
        self.k_max = k_max
        self.seconds = 0.0
        self.calls = 0
        self.completions = 0

    def reset_counters(self) -> None:
        """Forget the time and calls so far (screening's calls are not the phase's)."""
        self.seconds = 0.0
        self.calls = 0
        self.completions = 0
        self.f1_sum = 0.0
        self.diversity_sum = 0.0

    def summary(self) -> dict:
        """Figures of the reward's parts for the phase record (none unless composite)."""
        return {}

    def parse(self, completions: Sequence[object]) -> list[ParsedKeywords]:
        return [parse_keywords(completion_text(c), k_max=self.k_max) for c in completions]

    def _timed(self, score, ids: Sequence[str], completions: Sequence[object]) -> list[float]:  # noqa: ANN001
        start = time.perf_counter()
        parsed = self.parse(completions)
        values = score(list(ids), [p.keywords for p in parsed], [p.oversized for p in parsed], self.beta)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        self.completions += len(parsed)
        return [float(v) for v in values]


class QueryF1Reward(_ShadowReward):
    """Query side (Eq. 2.2): F_beta of the retrieved set against rel(q); 0 if oversized.

    With `diversity_weight` w > 0 the reward is F_beta + w * diversity, the diversity
    being the Vendi score of the set's MiniLM embeddings divided by k_max (R4T; see
    `diversity.py` for why not by the set's size); oversized sets still get 0.
    """

    __name__ = "query_f1"

    def __init__(self, view: QueryView, beta: float = 1.0, k_max: int = DEFAULT_K_MAX, diversity_weight: float = 0.0,
                 embeddings: KeywordEmbeddings | None = None) -> None:
        super().__init__(view, beta, k_max)
        self.diversity_weight = diversity_weight
        self.embeddings = embeddings if embeddings is not None or diversity_weight <= 0 else KeywordEmbeddings()
        self.f1_sum = 0.0
        self.diversity_sum = 0.0
        if diversity_weight > 0:
            self.__name__ = "query_f1_diversity"

    def __call__(self, completions: Sequence[object], query_id: Sequence[str], **_: object) -> list[float]:
        score = self.view.query_rewards if self.diversity_weight <= 0 else self._f1_and_diversity
        return self._timed(score, query_id, completions)

    def _f1_and_diversity(self, ids: list[str], keyword_lists: list[list[str]], oversized: list[bool],
                          beta: float) -> np.ndarray:
        f1 = self.view.query_rewards(ids, keyword_lists, oversized, beta)
        scored = [[] if flag else keywords for keywords, flag in zip(keyword_lists, oversized)]
        diversity = np.array(self.embeddings.diversity(scored, self.k_max))
        self.f1_sum += float(f1.sum())
        self.diversity_sum += float(diversity.sum())
        return f1 + self.diversity_weight * diversity

    def summary(self) -> dict:
        if self.diversity_weight <= 0:
            return {}
        n = max(self.completions, 1)
        return {"diversity_weight": self.diversity_weight, "mean_f1": round(self.f1_sum / n, 4),
                "mean_diversity": round(self.diversity_sum / n, 4), "keywords_embedded": self.embeddings.encoded}


class ItemMarginalReward(_ShadowReward):
    """Item side (Eq. 2.3): R_new - R_old over all queries; -1 if oversized.

    `transposed=True` rewards with the item-centric F of Q_ret(i) against rel(i)."""

    __name__ = "item_marginal"

    def __init__(self, view: QueryView, beta: float = 1.0, k_max: int = DEFAULT_K_MAX, transposed: bool = False) -> None:
        super().__init__(view, beta, k_max)
        self.transposed = transposed
        if transposed:
            self.__name__ = "item_transposed_f"

    def __call__(self, completions: Sequence[object], item_id: Sequence[str], **_: object) -> list[float]:
        score = self.view.transposed_item_rewards if self.transposed else self.view.item_rewards
        return self._timed(score, item_id, completions)
