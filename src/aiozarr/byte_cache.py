"""`LRUByteCache`: a least-recently-used cache bounded by total bytes.

The engine keeps decoded shard indexes in one (they are small, immutable while
the shard is unchanged, and read before every inner chunk of a cold shard).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from aiozarr import fork_safe

__all__ = ["LRUByteCache"]


class LRUByteCache:
    """Values under hashable keys, each with a size in bytes; the total stays <= `max_bytes`.

    Putting a value evicts the least recently used ones until it fits. A value larger
    than `max_bytes` is not kept (`max_bytes=0` disables the cache). A lock makes each
    call atomic, so the cache may be shared between the event loop and worker threads.
    """

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._nbytes = 0
        self._lock = fork_safe.lock()
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        """Total size of the values held."""
        return self._nbytes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value at `key` (now the most recently used), or `default`."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return default
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """The value at `key`, or `default`, leaving the order and the counters as they are."""
        with self._lock:
            item = self._items.get(key)
            return default if item is None else item[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Keep `value` (of `nbytes` bytes) at `key`, evicting old values to make room."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes} for {key!r}")
        with self._lock:
            self._drop(key)
            if nbytes > self.max_bytes:
                return
            self._items[key] = (value, nbytes)
            self._nbytes += nbytes
            while self._nbytes > self.max_bytes:
                _, (_, size) = self._items.popitem(last=False)
                self._nbytes -= size

    def held_keys(self) -> list[Hashable]:
        """The keys held now, least recently used first."""
        with self._lock:
            return list(self._items)

    def invalidate(self, *keys: Hashable) -> None:
        """Forget the values at `keys`, if any."""
        with self._lock:
            for key in keys:
                self._drop(key)

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._items.clear()
            self._nbytes = 0

    def _drop(self, key: Hashable) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self._nbytes -= item[1]

    def __repr__(self) -> str:
        return f"LRUByteCache({len(self._items)} items, {self._nbytes} of {self.max_bytes} bytes)"
