"""Micro-batching of concurrent expansion requests, with de-duplication and a cache.

Why: one generation call on a batch of 16 texts costs little more than on one text
(the decode step is memory bound on CPU), so requests that arrive together, or while
the model is busy, are generated in one call. Identical texts in flight share one
future, so a burst of the same head query is generated once. Everything runs on the
event loop except the model call, which goes to `ModelThread`; a cached text is
answered without waiting for any generation.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Generic, TypeVar

from cogr_search.serve.cache import MISSING, LRUCache

T = TypeVar("T")
R = TypeVar("R")


class Overloaded(Exception):
    """More distinct texts are waiting than the service accepts (answer 503)."""


class GenerationTimeout(Exception):
    """A generation did not finish in time (answer 504); it keeps running and caches."""


class GenerationFailed(Exception):
    """The model raised (answer 503); the message is one line."""


class ModelThread:
    """One daemon thread that runs model calls in order.

    A daemon thread (unlike `ThreadPoolExecutor`'s) never holds up process exit behind
    a generation nobody waits for any more.
    """

    def __init__(self, name: str = "cogr-model") -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: object) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((future, fn, args))
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn, args = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as err:  # noqa: BLE001 - handed to the waiting request
                future.set_exception(err)

    def close(self) -> None:
        self._jobs.put(None)


@dataclass
class Counters:
    """What `/health` reports per side; tests read them to check batching and caching."""

    requests: int = 0
    texts: int = 0
    cache_hits: int = 0
    joined_in_flight: int = 0
    generation_calls: int = 0
    generated_texts: int = 0
    timeouts: int = 0
    failures: int = 0
    overloads: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class Batcher(Generic[T, R]):
    """Answers `expand(values)` from the cache, from in-flight futures, or by queueing
    the values for the next batched `generate` call on the model thread."""

    def __init__(
        self,
        generate: Callable[[list[T]], list[R]],
        key: Callable[[T], Hashable],
        model_thread: ModelThread,
        cache: LRUCache[R],
        *,
        max_batch: int = 16,
        max_wait_s: float = 0.002,
        max_pending: int = 1024,
        timeout_s: float = 30.0,
    ) -> None:
        self._generate = generate
        self._key = key
        self._model_thread = model_thread
        self.cache = cache
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_pending = max_pending
        self.timeout_s = timeout_s
        self.counters = Counters()
        self._in_flight: dict[Hashable, asyncio.Future[R]] = {}
        self._queue: dict[Hashable, T] = {}
        self._wake: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def start(self) -> None:
        """Start the batching loop on the running event loop."""
        self._wake = asyncio.Event()
        self._worker = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None

    async def expand(self, values: Sequence[T]) -> list[R]:
        """Results in input order; raises `Overloaded`, `GenerationTimeout` or `GenerationFailed`."""
        counters = self.counters
        counters.requests += 1
        counters.texts += len(values)
        results: list[object] = [MISSING] * len(values)
        waiting: list[tuple[int, asyncio.Future[R]]] = []
        loop = asyncio.get_running_loop()
        for index, value in enumerate(values):
            key = self._key(value)
            hit = self.cache.get(key)
            if hit is not MISSING:
                counters.cache_hits += 1
                results[index] = hit
                continue
            future = self._in_flight.get(key)
            if future is None:
                if len(self._in_flight) >= self.max_pending:
                    counters.overloads += 1
                    raise Overloaded(f"{len(self._in_flight)} texts are waiting for the model; retry later")
                future = loop.create_future()
                self._in_flight[key] = future
                self._queue[key] = value
                assert self._wake is not None, "Batcher.start() was not called"
                self._wake.set()
            else:
                counters.joined_in_flight += 1
            waiting.append((index, future))
        if waiting:
            pending = asyncio.gather(*(asyncio.shield(f) for _, f in waiting))
            try:
                done = await asyncio.wait_for(pending, self.timeout_s)
            except TimeoutError:
                counters.timeouts += 1
                raise GenerationTimeout(f"generation did not finish within {self.timeout_s:g} s") from None
            for (index, _), value in zip(waiting, done):
                results[index] = value
        return results  # type: ignore[return-value]

    async def _loop(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            if self.max_wait_s > 0:
                await asyncio.sleep(self.max_wait_s)  # a short window for requests arriving together
            keys = list(self._queue)[: self.max_batch]
            values = [self._queue.pop(k) for k in keys]
            if not self._queue:
                self._wake.clear()
            if keys:
                await self._run_batch(keys, values)

    async def _run_batch(self, keys: list[Hashable], values: list[T]) -> None:
        self.counters.generation_calls += 1
        self.counters.generated_texts += len(values)
        try:
            outputs = await asyncio.wrap_future(self._model_thread.submit(self._generate, values))
            if len(outputs) != len(values):
                raise RuntimeError(f"the model returned {len(outputs)} results for {len(values)} inputs")
        except Exception as err:  # noqa: BLE001 - reported to every waiting request
            self.counters.failures += 1
            failure = GenerationFailed(f"generation failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            for key in keys:
                future = self._in_flight.pop(key)
                if not future.done():
                    future.set_exception(failure)
                    future.exception()  # retrieved: no "never retrieved" warning if all waiters left
            return
        for key, output in zip(keys, outputs):
            self.cache.put(key, output)
            future = self._in_flight.pop(key)
            if not future.done():
                future.set_result(output)
