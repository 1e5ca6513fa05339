"""A bounded least-recently-used cache for expansions.

Query traffic is heavy-tailed: a few thousand head queries make most of the requests,
so a few thousand entries answer most of them without touching the model. A lock makes
it safe for apps that share one client across threads; it costs well under a
microsecond, far below anything else on the cached path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")
MISSING = object()


class LRUCache(Generic[V]):
    """`get` returns `MISSING` for an absent key; `capacity=0` caches nothing."""

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"cache capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | object:
        with self._lock:
            try:
                self._data.move_to_end(key)
            except KeyError:
                return MISSING
            return self._data[key]

    def put(self, key: Hashable, value: V) -> None:
        if self.capacity == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)

    def stats(self) -> dict:
        return {"size": len(self._data), "capacity": self.capacity}
