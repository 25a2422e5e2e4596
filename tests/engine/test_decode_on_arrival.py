"""Inner chunks are decoded as their bytes land, not after the whole shard has.

A shard larger than the part size is read as its index beside its first parts, then
the rest in parts; each chunk is decoded as soon as the parts holding it have landed.
Against the emulator with every response body paced (a cloud store's bandwidth per
connection), the shard's last parts are held back until the first chunk is decoded:
they reach the server only after it, and a read that waited for the whole shard
would never end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Buffer, Store, Version, Versioned
from aiozarr.storage.protocol.wrapper import WrapperStore

pytestmark = pytest.mark.timeout(60)

PART = 64 << 10


class HoldingTail(WrapperStore):
    """Holds reads of ranges from `start` on until `release` is set."""

    def __init__(self, inner: Store, start: int) -> None:
        super().__init__(inner)
        self.start = start
        self.release = asyncio.Event()

    async def _wait(self, byte_ranges: Sequence[ByteRange | None]) -> None:
        if any(r is not None and r.suffix is None and r.offset >= self.start for r in byte_ranges):
            await self.release.wait()

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        await self._wait([byte_range])
        return await super().read(key, byte_range, max_bytes)

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        await self._wait(byte_ranges)
        return await super().read_ranges(key, byte_ranges, max_bytes)


async def test_chunks_are_decoded_before_the_last_byte_of_their_shard_lands(
    emulator: Emulator,
) -> None:
    store = from_url(emulator.s3_url("arrival.zarr"), storage_options=emulator.storage_options())
    data = np.random.default_rng(3).random((256, 256))  # 512 KiB: one shard of 64 chunks
    arr = await aiozarr.create_array_async(
        store,
        shape=data.shape,
        dtype="f8",
        chunks=(32, 32),
        shards=data.shape,
        compressors=None,
    )
    await arr.setitem(..., data)
    shard_bytes = await store.getsize("c/0/0")
    assert shard_bytes is not None and shard_bytes > 4 * PART
    holding = HoldingTail(store, start=4 * PART)  # the last 4 parts
    reader = await aiozarr.open_array_async(holding, mode="r")  # no index cached

    asked_at_decode: list[int] = []  # requests the emulator had received, per decode
    loop = asyncio.get_running_loop()

    def progress(done: int, total: int) -> None:
        asked_at_decode.append(emulator.stats()["requests"])
        loop.call_soon_threadsafe(holding.release.set)

    emulator.set_network(bandwidth_mbps=4)  # 64 KiB parts take 16 ms each
    emulator.reset_stats()
    with config.set(max_request_bytes=PART, parts_per_object=2, hedge_reads=False):
        try:
            async with asyncio.timeout(20):  # the first decode lets the last parts go
                got = await reader.getitem(..., progress=progress)
        except TimeoutError:
            raise AssertionError("no chunk was decoded before the shard's last parts") from None
    assert np.array_equal(got, data)
    # The index and 2 parts ahead of it (one wave), then the other 6 parts of 64 KiB,
    # 2 at a time.
    assert emulator.stats()["requests"] == 1 + data.nbytes // PART
    # Decoding began while the last 4 parts had not reached the server.
    assert asked_at_decode[0] <= 5, asked_at_decode
