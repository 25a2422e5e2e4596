"""What the batches of a read that plans shards by their indexes look like, and a store
that answers one shard's index late."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.protocol import Buffer, RangeRequest, Store, Version


def is_index(request: RangeRequest) -> bool:
    """Whether `request` asks for a shard index (a suffix range, the index at the end)."""
    return getattr(request.byte_range, "suffix", None) is not None


def assert_indexes_then_data(batches: Sequence[Sequence[RangeRequest]], indexes: int) -> None:
    """The first of `batches` asks for `indexes` shard indexes and nothing else; every
    later one for chunk data alone (a shard's chunks go out as its index lands, in as
    many batches as its index's answer came in bursts)."""
    first, *data = batches
    assert len(first) == indexes and all(is_index(r) for r in first), first
    assert data and not any(is_index(r) for batch in data for r in batch), data


class LateIndex(CountingStore):
    """Holds the answer to the index of shard `late` until a chunk of another shard has
    been asked for (or 10 s have passed: then the read waited for every index)."""

    def __init__(self, inner: Store, late: str) -> None:
        super().__init__(inner)
        self.late = late
        self.data_asked = anyio.Event()
        self.held_until_data = False

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        if key == self.late and any(r.suffix is not None for r in byte_ranges):
            with anyio.move_on_after(10):
                await self.data_asked.wait()
                self.held_until_data = True
        elif any(r.suffix is None for r in byte_ranges):
            self.data_asked.set()
        return await super().read_ranges(key, byte_ranges, max_bytes)
