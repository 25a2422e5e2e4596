"""`RoundTripStore`: a `CountingStore` that also counts the round trips on the critical
path, for tests and benchmarks that hold a read or an open to a number of round trips;
`RoundTrips`, the log of them, which several stores can share."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.protocol import Buffer, Store, Version, Versioned

__all__ = ["RoundTripStore", "RoundTrips"]

T = TypeVar("T")

# Turns of the event loop an answer waits before it counts as finished: a request sent
# together with it that reaches the store a few turns later (its task's start, a budget
# slot, a stream's hop) still shares its depth, however slow the machine runs the loop.
_SETTLE_TURNS = 16


async def _settle() -> None:
    for _ in range(_SETTLE_TURNS):
        await asyncio.sleep(0)


class RoundTrips:
    """The requests of one or more stores with their round trip, in the order begun.

    A request's round trip is one more than the deepest request that had already
    finished when it began, so requests sent together share one and a request sent
    after an answer came back is one deeper. `reads`: `(round trip, key)` of each.
    """

    def __init__(self) -> None:
        self.reads: list[tuple[int, str]] = []
        self._finished = 0

    @property
    def depth(self) -> int:
        """The deepest round trip seen."""
        return max((level for level, _ in self.reads), default=0)

    def clear(self) -> None:
        self.reads.clear()
        self._finished = 0

    def began(self, key: str) -> int:
        level = self._finished + 1
        self.reads.append((level, key))
        return level

    def ended(self, level: int) -> None:
        self._finished = max(self._finished, level)

    def by_round_trip(self) -> list[list[str]]:
        """The keys requested in each round trip, sorted (each key once per request)."""
        out: list[list[str]] = [[] for _ in range(self.depth)]
        for level, key in self.reads:
            out[level - 1].append(key)
        return [sorted(keys) for keys in out]


class RoundTripStore(CountingStore):
    """A `CountingStore` that also logs each request's round trip (`RoundTrips`, its own
    or one shared with other stores) and gives the deepest as `depth`.

    An answer counts as finished only after the loop has turned `_SETTLE_TURNS` times
    more, and only then reaches the reader, so the depths do not depend on how fast
    the machine is. Listings count as requests.
    """

    def __init__(self, inner: Store, log: RoundTrips | None = None) -> None:
        super().__init__(inner)
        self.log = RoundTrips() if log is None else log

    @property
    def depth(self) -> int:
        """The deepest round trip of the requests logged."""
        return self.log.depth

    def reset(self) -> None:
        super().reset()
        self.log.clear()

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        return await self._request(key, super().read(key, byte_range, max_bytes))

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        # one request however many ranges it coalesced
        return await self._request(key, super().read_ranges(key, byte_ranges, max_bytes))

    def range_began(self, key: str) -> object:
        return self.log.began(key)

    def range_ended(self, token: object, hand_on: Callable[[], None]) -> None:
        # As `_request`: the answer counts as finished once the loop has turned
        # `_SETTLE_TURNS` times more, and only then reaches the reader, so a request it
        # leads to is always one deeper, however fast the reader acts on it.
        loop = asyncio.get_running_loop()

        def turn(left: int) -> None:
            if left:
                loop.call_soon(turn, left - 1)
            else:
                self.log.ended(token)  # type: ignore[arg-type]
                hand_on()

        turn(_SETTLE_TURNS)

    async def _request(self, key: str, request: Awaitable[T]) -> T:
        """`await request` at its round trip, its answer settled before it counts as
        finished."""
        level = self.log.began(key)
        try:
            answer = await request
            await _settle()
            return answer
        finally:
            self.log.ended(level)

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        level = self.log.began(prefix)
        try:
            async for name in super().list_dir(prefix):
                yield name
            await _settle()
        finally:
            self.log.ended(level)
