"""A least-recently-used cache of computed attention, bounded in bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class ByteLRU(Generic[V]):
    """Maps keys to values with a known size; evicts the least recently used past `max_bytes`.

    A value larger than the whole budget is not stored. Safe to share between threads.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: V, nbytes: int) -> int:
        """Store a value; returns how many bytes of older values were evicted for it."""
        if nbytes > self.max_bytes:
            return 0
        evicted = 0
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.used -= old[1]
            while self._items and self.used + nbytes > self.max_bytes:
                _, (_, size) = self._items.popitem(last=False)
                self.used -= size
                evicted += size
            self._items[key] = (value, nbytes)
            self.used += nbytes
        return evicted
