"""`RoundTripStore`: a `CountingStore` that also counts the round trips on the critical
path, for tests and benchmarks that hold a read or an open to a number of round trips."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.protocol import Buffer, Store, Version, Versioned

__all__ = ["RoundTripStore"]

T = TypeVar("T")

# Turns of the event loop an answer waits before it counts as finished: a request sent
# together with it that reaches the store a few turns later (its task's start, a budget
# slot, a stream's hop) still shares its depth, however slow the machine runs the loop.
_SETTLE_TURNS = 16


async def _settle() -> None:
    for _ in range(_SETTLE_TURNS):
        await asyncio.sleep(0)


class RoundTripStore(CountingStore):
    """A `CountingStore` that also measures `depth`: the round trips on the critical path.

    A request's depth is one more than the deepest request that had already finished
    when it started, so requests sent together share a depth and a request sent after
    an answer came back is one deeper. An answer counts as finished only after the loop
    has turned `_SETTLE_TURNS` times more, so the depths do not depend on how fast the
    machine is. `depth` is the deepest request seen; listings count as requests.
    """

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.depth = 0
        self._finished = 0

    def reset(self) -> None:
        super().reset()
        self.depth = self._finished = 0

    def _begin(self) -> int:
        level = self._finished + 1
        self.depth = max(self.depth, level)
        return level

    def _end(self, level: int) -> None:
        self._finished = max(self._finished, level)

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        return await self._request(super().read(key, byte_range, max_bytes))

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        return await self._request(super().read_ranges(key, byte_ranges, max_bytes))

    def range_began(self, key: str) -> object:
        return self._begin()

    def range_ended(self, token: object, hand_on: Callable[[], None]) -> None:
        # As `_request`: the answer counts as finished once the loop has turned
        # `_SETTLE_TURNS` times more, and only then reaches the reader, so a request it
        # leads to is always one deeper, however fast the reader acts on it.
        loop = asyncio.get_running_loop()

        def turn(left: int) -> None:
            if left:
                loop.call_soon(turn, left - 1)
            else:
                self._end(token)  # type: ignore[arg-type]
                hand_on()

        turn(_SETTLE_TURNS)

    async def _request(self, request: Awaitable[T]) -> T:
        """`await request` at its depth, its answer settled before it counts as finished."""
        level = self._begin()
        try:
            answer = await request
            await _settle()
            return answer
        finally:
            self._end(level)

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        level = self._begin()
        try:
            async for name in super().list_dir(prefix):
                yield name
            await _settle()
        finally:
            self._end(level)
