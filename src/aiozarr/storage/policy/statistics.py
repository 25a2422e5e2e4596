"""`RequestStats`: what one store's requests did, counted for every caller.

One per store runtime, shared like the budgets by every array, call, thread and event
loop that uses the store. The request policy (`storage/policy/retry.py`) counts requests,
bytes, retries, throttles, timeouts and hedges here, and records two `LatencyWindow`s
that tell it when a read is slow enough to hedge: how long reads took, by size class,
and how long reads waited for their answer to begin (the first byte), whatever their size.

    statistics.count("retries")
    statistics.snapshot()   # {"requests": 12, ..., "latency_p95_ms": 41.2}
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from typing import Any, NamedTuple

__all__ = ["EVENTS", "InFlight", "LatencyWindow", "Link", "RequestStats"]

#: The counters `RequestStats.snapshot()` always reports (zero until they happen):
#: requests sent, requests finished by kind, bytes moved, and what the request policy did.
EVENTS = (
    "requests",
    "reads",
    "writes",
    "deletes",
    "stats",
    "lists",
    "bytes_read",
    "bytes_written",
    "retries",
    "errors",
    "timeouts",
    "throttled",
    "hedges_issued",
    "hedges_won",
    "gave_up",
    # the chunk cache (engine/chunk_cache.py): chunks served and decoded, objects
    # revalidated, and the conditional requests that did it
    "cache_hits",
    "cache_misses",
    "cache_revalidations",
    "revalidates",
)

#: A finished request's counter, by action (`RequestStats.finished`).
_FINISHED = {name[:-1]: name for name in ("reads", "writes", "deletes", "stats", "lists")}

# Latencies kept per size class; p95 over the last 128 is stable yet follows change.
_WINDOW = 128
# Body rates kept: the link's speed decides request sizes, and a median of 32 follows a
# link that changed (a loaded network, a store moved) within 16 large reads, where 128
# kept the old sizes for a whole run of reads (a 20 ms link's whole-shard requests on a
# 90 MB/s one: the slab 2x slower).
_BODY_WINDOW = 32
# Send times kept to tell a crowd's share: the reads of a few large batches.
_SENDS_KEPT = 4096
# Fewer samples than this: no p95 yet (no peers to compare with, so no hedging).
_MIN_SAMPLES = 16


class LatencyWindow:
    """Recent request latencies by size class (powers of 4 bytes), thread-safe."""

    def __init__(self, size: int = _WINDOW) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._samples: dict[int, deque[float]] = {}
        self._p95: dict[int, float | None] = {}
        self._median: dict[int, float | None] = {}
        self._since: dict[int, int] = {}  # samples added since the two were worked out

    @staticmethod
    def _size_class(nbytes: int | None) -> int:
        return -1 if nbytes is None else nbytes.bit_length() // 2

    def add(self, nbytes: int | None, seconds: float) -> None:
        """Record how long a successful request of `nbytes` took."""
        size_class = -1 if nbytes is None else nbytes.bit_length() // 2
        with self._lock:
            window = self._samples.get(size_class)
            if window is None:
                window = self._samples[size_class] = deque(maxlen=self._size)
            window.append(seconds)
            # Recomputed on demand, once a sixteenth of the window is new: a p95 over 128
            # hardly moves with one sample, and sorting them cost every request.
            since = self._since.get(size_class, 0) + 1
            if since >= len(window) >> 4:
                self._p95[size_class] = self._median[size_class] = None
                since = 0
            self._since[size_class] = since

    def percentiles(self) -> dict[str, float | None]:
        """p50/p95/p99 in milliseconds over every recent request, whatever its size
        (None before the first)."""
        with self._lock:
            ordered = sorted(x for window in self._samples.values() for x in window)

        def pick(q: float) -> float | None:
            return round(1000 * ordered[int(q * (len(ordered) - 1))], 3) if ordered else None

        return {
            "latency_p50_ms": pick(0.50),
            "latency_p95_ms": pick(0.95),
            "latency_p99_ms": pick(0.99),
        }

    def clear(self) -> None:
        with self._lock:
            self._samples.clear()
            self._p95.clear()
            self._median.clear()
            self._since.clear()

    def _after_fork(self) -> None:
        # A parent thread may have held the lock at fork time: the child's copy would
        # stay locked forever.
        self._lock = threading.Lock()

    def p95(self, nbytes: int | None) -> float | None:
        """The 95th percentile latency of recent requests of about this size, if known."""
        size_class = self._size_class(nbytes)
        with self._lock:
            window = self._samples.get(size_class)
            if window is None or len(window) < _MIN_SAMPLES:
                return None
            cached = self._p95.get(size_class)
            if cached is None:
                ordered = sorted(window)
                cached = self._p95[size_class] = ordered[int(0.95 * (len(ordered) - 1))]
            return cached

    def median(self, nbytes: int | None) -> float | None:
        """The median recent latency of requests of about this size, from however few
        (None before one)."""
        size_class = self._size_class(nbytes)
        with self._lock:
            window = self._samples.get(size_class)
            if not window:
                return None
            cached = self._median.get(size_class)
            if cached is None:
                cached = self._median[size_class] = sorted(window)[len(window) // 2]
            return cached


class Link(NamedTuple):
    """What recent reads say of the link to a store: how long an answer takes to begin,
    and how fast one answer's body then comes (bytes per second)."""

    wait_s: float
    body_bytes_per_s: float


class InFlight:
    """The hedged reads in flight: when each was sent and when its answer began (None:
    not yet), on `time.monotonic()`; thread-safe. Hedging asks how crowded the wait is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: dict[int, tuple[float, float | None]] = {}
        self._sends: deque[float] = deque(maxlen=_SENDS_KEPT)  # every read's, in order

    def add(self, token: object, sent: float) -> None:
        with self._lock:
            self._reads[id(token)] = (sent, None)
            self._sends.append(sent)

    def began(self, token: object, at: float) -> None:
        """The answer of `token`'s read began `at`: its body is on its way."""
        with self._lock:
            entry = self._reads.get(id(token))
            if entry is not None:
                self._reads[id(token)] = (entry[0], at)

    def discard(self, token: object) -> None:
        with self._lock:
            self._reads.pop(id(token), None)

    def crowded(
        self, token: object, since: float, *, waiting: bool, crowd: int, share: float = 0.0
    ) -> bool:
        """Whether `crowd` or more reads other than `token`'s were sent by `since` and
        are still in flight (`waiting`: and had no answer begun by then), and they are
        at least `share` of the reads sent about when `token`'s was (as long before it
        as `since` is after it): a few slow reads among many sent together are each a
        straggler, a crowd only if they are a crowd's share of them."""
        mine = id(token)
        found = 0
        with self._lock:
            for key, (sent, began) in self._reads.items():
                if sent > since:
                    break  # sent later, as is every read after it
                if key != mine and not (waiting and began is not None and began <= since):
                    found += 1
            if found < crowd:
                return False
            if share <= 0.0:
                return True
            sent = self._reads.get(mine, (since, None))[0]
            return found >= share * self._sent_between(2 * sent - since, since)

    def _sent_between(self, start: float, end: float) -> int:
        """How many reads were sent from `start` to `end` (the recent ones kept)."""
        count = 0
        for sent in reversed(self._sends):
            if sent < start:
                break
            count += sent <= end
        return count

    def _after_fork(self) -> None:
        # The parent's requests are not the child's.
        self._lock = threading.Lock()
        self._reads = {}
        self._sends = deque(maxlen=_SENDS_KEPT)


class RequestStats:
    """Thread-safe event counters (`EVENTS`, and any other name counted) and the
    `latencies` of recent reads, and their `first_bytes` waits (kept under the size
    `None`: the wait for an answer to begin hardly depends on its size), and the hedged
    reads `in_flight` now."""

    def __init__(self) -> None:
        self.latencies = LatencyWindow()
        self.first_bytes = LatencyWindow()
        # Seconds per MiB of the bodies of large reads: how fast one answer comes.
        self.body_times = LatencyWindow(_BODY_WINDOW)
        self.in_flight = InFlight()
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def __reduce__(self) -> tuple[Any, ...]:
        # What this process's requests did: a copy starts afresh.
        return (RequestStats, ())

    def count(self, event: str, n: int = 1) -> None:
        """Add `n` to the counter `event`."""
        with self._lock:
            self._counts[event] += n

    def finished(self, action: str, nbytes: int | None, received: int, seconds: float) -> None:
        """Count one request of `action` that succeeded in `seconds`: its kind, the bytes
        it moved (`received` for a read, `nbytes` for a write), a read's latency. One
        call per request: the request path pays for one lock here, not one per counter."""
        with self._lock:
            counts = self._counts
            counts[_FINISHED.get(action) or f"{action}s"] += 1
            if action == "read":
                counts["bytes_read"] += received
            elif action == "write":
                counts["bytes_written"] += nbytes or 0
        if action == "read":
            self.latencies.add(nbytes, seconds)

    def counts(self) -> dict[str, int]:
        """Every counter: each of `EVENTS` (0 until it happens), then any other counted."""
        with self._lock:
            return {**dict.fromkeys(EVENTS, 0), **self._counts}

    def link(self) -> Link | None:
        """The link as recent reads found it (median wait, median body rate); None
        before a large read has told both."""
        wait, per_mib = self.first_bytes.median(None), self.body_times.median(None)
        if wait is None or per_mib is None:
            return None
        return Link(wait, (1 << 20) / max(per_mib, 1e-9))

    def snapshot(self) -> dict[str, float | None]:
        """`counts()` and the p50/p95/p99 latencies of recent reads, as a plain dict."""
        return {**self.counts(), **self.latencies.percentiles()}

    def reset(self) -> None:
        """Zero the counters and forget the latencies."""
        with self._lock:
            self._counts.clear()
        self.latencies.clear()
        self.first_bytes.clear()
        self.body_times.clear()

    def _after_fork(self) -> None:
        # The counters stay; the locks, which a parent thread may have held at fork
        # time, are the child's own.
        self._lock = threading.Lock()
        self.latencies._after_fork()
        self.first_bytes._after_fork()
        self.body_times._after_fork()
        self.in_flight._after_fork()
