"""What the emulator counts and the conditions it serves under: its counters, the network
shaping (first-byte latency, a bandwidth cap, a seeded slow tail) and the fault rules.

One lock guards them all: requests are counted on the server's loop while tests, the
control endpoints (control.py) and `aiozarr serve`'s users read and change them from
other threads. The server (server.py) asks it what to do with each request; it never
sees a request itself.
"""

from __future__ import annotations

import math
import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiozarr.emulator.faults import MAX_DELAY_S, Fault, check_number, make_fault

__all__ = ["Conditions", "Stats"]


@dataclass
class Stats:
    """The counters, zeroed by `Conditions.reset_stats`."""

    requests: int = 0
    by_method: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    bytes_read: int = 0  # response bodies: what clients downloaded
    bytes_written: int = 0  # request bodies stored: what clients uploaded
    inflight: int = 0  # every request in flight, those begun before the reset too
    peak_inflight: int = 0  # the most in flight at once of those begun since the reset
    fresh: int = 0  # in flight, begun since the reset
    faults: int = 0
    tails: int = 0  # answers held back by the slow tail


class Conditions:
    """The counters, network shaping and fault rules of one emulator (see
    `Emulator.set_network` and `Emulator.inject` for what each setting does). `seed`
    seeds the fault draws and, apart from them, the slow tail's."""

    def __init__(
        self,
        *,
        latency_ms: float = 0.0,
        seed: int = 0,
        bandwidth_mbps: float = 0.0,
        tail_rate: float = 0.0,
        tail_ms: float = 200.0,
    ) -> None:
        self._lock = threading.Lock()
        self._stats = Stats()
        self._faults: list[Fault] = []
        self._rng = random.Random(seed)
        self._latency_s = check_number("latency_ms", latency_ms) / 1000
        self._list_latency_s = 0.0
        self._bandwidth_bps = 0.0  # bytes per second per response; 0: unlimited
        self._tail_rate, self._tail_s = 0.0, 0.0
        self._tail_rng = random.Random(seed)  # its own, so tails do not shift fault draws
        self.set_network(bandwidth_mbps=bandwidth_mbps, tail_rate=tail_rate, tail_ms=tail_ms)

    # -- counters ----------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters and the shaping (plain dicts and ints; JSON-ready)."""
        with self._lock:
            s = self._stats
            data: dict[str, Any] = {
                "requests": s.requests,
                "by_method": dict(s.by_method),
                "by_kind": dict(s.by_kind),
                "by_status": {str(k): v for k, v in s.by_status.items()},
                "bytes_read": s.bytes_read,
                "bytes_written": s.bytes_written,
                "inflight": s.inflight,
                "peak_inflight": s.peak_inflight,
                "faults": s.faults,
                "tails": s.tails,
            }
        data.update(self.network())
        return data

    def reset_stats(self) -> None:
        """Zero the counters (requests in flight stay counted in `inflight`, but not in
        `peak_inflight`: a straggler of an earlier test does not count in the next's)."""
        with self._lock:
            self._stats = Stats(inflight=self._stats.inflight)

    def request_started(self, method: str, kind: str) -> Stats:
        """Count a request of `method` and `kind` (server.py's `request_kind`) as begun;
        hand what it returns to `request_finished`."""
        with self._lock:
            s = self._stats
            s.requests += 1
            s.by_method[method] += 1
            s.by_kind[kind] += 1
            s.inflight += 1
            s.fresh += 1
            s.peak_inflight = max(s.peak_inflight, s.fresh)
            return s

    def request_finished(self, began: Stats, status: int) -> None:
        """Count a request as done, answered with `status` (0: no answer was made);
        `began`: what `request_started` returned for it."""
        with self._lock:
            s = self._stats
            s.inflight -= 1
            if began is s:
                s.fresh -= 1
            if status:
                s.by_status[status] += 1

    def count_read(self, nbytes: int) -> None:
        """Count `nbytes` of response body sent."""
        with self._lock:
            self._stats.bytes_read += nbytes

    def count_written(self, nbytes: int) -> None:
        """Count `nbytes` of request body received."""
        with self._lock:
            self._stats.bytes_written += nbytes

    # -- network shaping ---------------------------------------------------------------

    @property
    def bandwidth_bps(self) -> float:
        """The most bytes per second one body moves at (0: no cap)."""
        return self._bandwidth_bps

    def set_latency(self, ms: float) -> None:
        """Delay every later answer by `ms` milliseconds."""
        self._latency_s = check_number("ms", ms, high=MAX_DELAY_S * 1000) / 1000

    def set_list_latency(self, ms: float) -> None:
        """Delay every later listing page by `ms` more milliseconds."""
        self._list_latency_s = check_number("ms", ms, high=MAX_DELAY_S * 1000) / 1000

    def set_network(
        self,
        *,
        latency_ms: float | None = None,
        bandwidth_mbps: float | None = None,
        tail_rate: float | None = None,
        tail_ms: float | None = None,
        seed: int | None = None,
    ) -> None:
        """Change the shaping; an argument left out keeps its value. Every argument is
        checked before any changes (ValueError, TypeError)."""
        for name, value, high in (
            ("latency_ms", latency_ms, MAX_DELAY_S * 1000),
            ("bandwidth_mbps", bandwidth_mbps, math.inf),
            ("tail_ms", tail_ms, MAX_DELAY_S * 1000),
            ("tail_rate", tail_rate, 1),
        ):
            if value is not None:
                check_number(name, value, high=high)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an integer, not {seed!r}")
        if latency_ms is not None:
            self._latency_s = latency_ms / 1000
        if bandwidth_mbps is not None:
            self._bandwidth_bps = bandwidth_mbps * 1e6
        if tail_rate is not None:
            self._tail_rate = tail_rate
        if tail_ms is not None:
            self._tail_s = tail_ms / 1000
        if seed is not None:
            with self._lock:
                self._tail_rng.seed(seed)

    def network(self) -> dict[str, float]:
        """The shaping in force: `latency_ms`, `bandwidth_mbps`, `tail_rate`, `tail_ms`."""
        return {
            "latency_ms": self._latency_s * 1000,
            "bandwidth_mbps": self._bandwidth_bps / 1e6,
            "tail_rate": self._tail_rate,
            "tail_ms": self._tail_s * 1000,
        }

    def first_byte_delay(self, kind: str) -> float:
        """Seconds to hold back the answer to a request of `kind` before its first byte:
        the latency, a listing's extra, and the slow tail when its draw says so."""
        delay = self._latency_s
        if self._list_latency_s and kind == "list":
            delay += self._list_latency_s
        if self._tail_rate > 0:
            with self._lock:
                slow = self._tail_rng.random() < self._tail_rate
                self._stats.tails += slow
            delay += self._tail_s if slow else 0.0
        return delay

    # -- faults ------------------------------------------------------------------------

    @staticmethod
    def make_fault(kind: str, **options: Any) -> Fault:
        """A fault rule, its arguments checked (faults.make_fault)."""
        return make_fault(kind, **options)

    def add_fault(self, fault: Fault) -> Fault:
        """Add a rule made by `make_fault`, tried after those already in force."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def faults(self) -> list[Fault]:
        """The rules in force, in the order they are tried."""
        with self._lock:
            return list(self._faults)

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        with self._lock:
            self._faults.clear()

    def pick_fault(self, method: str, key: str) -> Fault | None:
        """The first rule that fires on a request of `method` for `key` (a rule with a
        count used up is removed), counted; None when none does."""
        with self._lock:
            for fault in self._faults:
                if not fault.matches(method, key):
                    continue
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                elif fault.rate is not None and self._rng.random() >= fault.rate:
                    continue
                self._stats.faults += 1
                return fault
        return None
