"""Every read the stores of an icechunk read make, in order, with its round trip.

A read's round trip is one more than the deepest of the reads that had ended when it
began: reads asked together (one batch, or batches spawned at once) share one, a read
that needed another's answer comes after it. Every store a test opens by URL
(`from_url`: the repository's own, each virtual chunk source's) is wrapped.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.opening import url as opening

__all__ = ["RoundTrips", "round_trips"]


class RoundTrips:
    """`reads`: `(round trip, key)` of every read since `clear()`, in the order begun."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, str]] = []
        self._deepest_ended = 0

    def clear(self) -> None:
        self.reads.clear()
        self._deepest_ended = 0

    def began(self, key: str) -> int:
        depth = self._deepest_ended + 1
        self.reads.append((depth, key))
        return depth

    def ended(self, depth: int) -> None:
        self._deepest_ended = max(self._deepest_ended, depth)

    def by_round_trip(self) -> list[list[str]]:
        """The keys read in each round trip, sorted (each key once per read)."""
        out: list[list[str]] = [[] for _ in range(max((d for d, _ in self.reads), default=0))]
        for depth, key in self.reads:
            out[depth - 1].append(key)
        return [sorted(keys) for keys in out]


class _Logged(CountingStore):
    def __init__(self, inner: Any, log: RoundTrips) -> None:
        super().__init__(inner)
        self._log = log

    async def read(self, key: str, byte_range: Any, max_bytes: int | None) -> Any:
        depth = self._log.began(key)
        try:
            return await super().read(key, byte_range, max_bytes)
        finally:
            self._log.ended(depth)

    def range_began(self, key: str) -> object:
        return self._log.began(key)

    def range_ended(self, token: object) -> None:
        self._log.ended(token)  # type: ignore[arg-type]

    async def read_ranges(self, key: str, byte_ranges: Sequence[Any], max_bytes: int | None) -> Any:
        depth = self._log.began(key)  # one request however many ranges it coalesced
        try:
            return await super().read_ranges(key, byte_ranges, max_bytes)
        finally:
            self._log.ended(depth)


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    """Every store opened by URL in the test logs its reads into one `RoundTrips`."""
    log = RoundTrips()
    from_url = opening.from_url
    monkeypatch.setattr(opening, "from_url", lambda *a, **k: _Logged(from_url(*a, **k), log))
    yield log
