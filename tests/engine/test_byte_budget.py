"""A read of more bytes than the store's byte budget runs in batches, and a batch gives
its bytes back as its answers are decoded: a later batch starts while the earlier ones
still wait for answers (it used to wait for a whole earlier batch)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Versioned
from aiozarr.storage.protocol.wrapper import WrapperStore

pytestmark = pytest.mark.timeout(30)

CHUNK = 1024  # int32 elements: 4 KiB a chunk, stored uncompressed


class HoldingStore(WrapperStore):
    """Records the keys read, and holds the answers for `held` until `release` is set."""

    def __init__(self, inner: MemoryStore, held: set[str]) -> None:
        super().__init__(inner)
        self.held = held
        self.release = asyncio.Event()
        self.asked: list[str] = []

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        self.asked.append(key)
        if key in self.held:
            await self.release.wait()
        return await super().read(key, byte_range, max_bytes)


async def test_a_later_batch_starts_while_an_earlier_one_waits_for_an_answer() -> None:
    # Room for 4 chunks (a store's budget is sized when it is made): batches of 2,
    # [c/0, c/1], [c/2, c/3], [c/4, c/5], two at once.
    with config.set(max_inflight_bytes=4 * 4 * CHUNK, hedge_reads=False):
        memory = MemoryStore()
        data = np.arange(6 * CHUNK, dtype="i4")
        arr = await aiozarr.create_array_async(
            memory, shape=data.shape, dtype="i4", chunks=(CHUNK,), compressors=None
        )
        await arr.setitem(..., data)
        store = HoldingStore(memory, held={"c/0", "c/2"})  # one of each of the first batches
        reader = await aiozarr.open_array_async(store, mode="r")
        read = asyncio.ensure_future(reader.getitem(...))
        try:
            async with asyncio.timeout(10):
                while "c/5" not in store.asked:  # c/1 and c/3 decoded make room
                    await asyncio.sleep(0.005)
            assert not read.done()
        finally:
            store.release.set()
        got = await read
    assert np.array_equal(got, data)
    assert store.runtime.bytes.capacity == 4 * 4 * CHUNK
    assert store.runtime.bytes.held == 0
    assert store.runtime.bytes.peak <= 4 * 4 * CHUNK
