"""The expansion service's core: one `Batcher` per side over one expander, and health.

Kept apart from the web layer (`app.py`) so its behaviour (batching, de-duplication,
cache, timeouts) is one object with no HTTP in it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cogr_search.serve.batcher import Batcher, ModelThread
from cogr_search.serve.cache import LRUCache
from cogr_search.serve.expander import Expander
from cogr_search.serve.limits import ItemInput, Limits


class ServiceConfig(BaseModel):
    """Batching, cache and timeout settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cache_size: int = Field(10_000, ge=0, description="LRU entries per side (0: no cache).")
    max_batch: int = Field(16, ge=1, description="Texts per generation call.")
    max_wait_ms: float = Field(2.0, ge=0, description="How long a new text waits for others to share its generation call.")
    max_pending: int = Field(1024, ge=1, description="Texts waiting per side before new requests get 503.")
    generation_timeout_s: float = Field(30.0, gt=0, description="Seconds a request waits for the model before answering 504.")


class ServeConfig(BaseModel):
    """Everything `cogr-search serve` takes besides the run and the address: `--config FILE`
    holds this document, and each flag sets one field of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    service: ServiceConfig = ServiceConfig()
    limits: Limits = Limits()
    sides: Literal["both", "query", "item"] = Field("both", description="Which generators to load.")
    sampling: Literal["eval", "greedy"] = Field(
        "eval", description="Decoding preset (eval = T 0.7, top-p 0.8, top-k 20, seeded)."
    )
    max_new_tokens: int | None = Field(None, ge=1, description="Generation budget per text [default: the run's].")
    backend: Literal["auto", "transformers", "vllm"] = "auto"
    expander: Literal["auto", "student", "llm"] = Field(
        "auto", description="auto: the round's students when it has them, else the LLM generators."
    )


class ExpansionService:
    """Query and item expansion for concurrent callers on one event loop."""

    def __init__(self, expander: Expander, config: ServiceConfig = ServiceConfig(), limits: Limits = Limits()) -> None:
        self.expander = expander
        self.config = config
        self.limits = limits
        self._model_thread: ModelThread | None = None
        self.query: Batcher[str, list[str]] | None = None
        self.item: Batcher[ItemInput, list[str]] | None = None

    def identity(self) -> dict:
        """The `run`, `round`, `model` and `expander` (llm or student: which kind answered)
        fields every answer carries."""
        return {"run": self.expander.run, "round": self.expander.round, "model": self.expander.model,
                "expander": getattr(self.expander, "kind", "llm")}

    def start(self) -> None:
        """Create the model thread and the batching loops (on the running event loop)."""
        self._model_thread = ModelThread()
        options = {
            "max_batch": self.config.max_batch,
            "max_wait_s": self.config.max_wait_ms / 1000.0,
            "max_pending": self.config.max_pending,
            "timeout_s": self.config.generation_timeout_s,
        }
        self.query = Batcher(
            self.expander.expand_queries, _query_key, self._model_thread, LRUCache(self.config.cache_size), **options
        )
        self.item = Batcher(
            self.expander.expand_items, _item_key, self._model_thread, LRUCache(self.config.cache_size), **options
        )
        self.query.start()
        self.item.start()

    async def stop(self) -> None:
        for batcher in (self.query, self.item):
            if batcher is not None:
                await batcher.stop()
        if self._model_thread is not None:
            self._model_thread.close()

    async def expand_queries(self, texts: Sequence[str]) -> list[list[str]]:
        assert self.query is not None, "ExpansionService.start() was not called"
        return await self.query.expand(texts)

    async def expand_items(self, items: Sequence[ItemInput]) -> list[list[str]]:
        assert self.item is not None, "ExpansionService.start() was not called"
        return await self.item.expand(items)

    def health(self) -> dict:
        batchers = {"query": self.query, "item": self.item}
        return {
            "status": "ok",
            "model_loaded": self.query is not None,
            **self.identity(),
            # a student serves without the ML stack: whether torch is in this process at all
            "torch_loaded": "torch" in sys.modules,
            "k_max": self.expander.k_max,
            "spec": _spec(self.expander),
            "cache": {side: b.cache.stats() for side, b in batchers.items() if b is not None},
            "counters": {side: b.counters.as_dict() for side, b in batchers.items() if b is not None},
            "in_flight": {side: b.in_flight for side, b in batchers.items() if b is not None},
            "limits": self.limits.as_dict(),
            "config": self.config.model_dump(),
        }


def _spec(expander: Expander) -> dict | None:
    """The run's serving spec, where the expander holds one (a run loaded here)."""
    spec = getattr(expander, "spec", None)
    return spec.model_dump() if spec is not None else None


def _query_key(text: str) -> str:
    return text


def _item_key(item: ItemInput) -> tuple[str, str]:
    return (item.title, item.description)
