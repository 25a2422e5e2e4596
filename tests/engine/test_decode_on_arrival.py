"""Inner chunks are decoded as their bytes land, not after the whole shard has.

A shard larger than the part size is read as its index beside its first parts, then
the rest in parts; each chunk is decoded as soon as the parts holding it have landed.
Against the emulator with every response body paced (a cloud store's bandwidth per
connection), the first chunk must be decoded before the shard's last parts have even
been asked for.
"""

from __future__ import annotations

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.storage.url import from_url

pytestmark = pytest.mark.timeout(60)

PART = 64 << 10


async def test_chunks_are_decoded_before_the_last_byte_of_their_shard_lands(
    emulator: Emulator,
) -> None:
    store = from_url(emulator.s3_url("arrival.zarr"), storage_options=emulator.storage_options())
    data = np.random.default_rng(3).random((256, 256))  # 512 KiB: one shard of 64 chunks
    arr = await aiozarr.create_array_async(
        store, shape=data.shape, dtype="f8", chunks=(32, 32), shards=data.shape,
        compressors=None,
    )
    await arr.setitem(..., data)
    shard_bytes = await store.getsize("c/0/0")
    assert shard_bytes is not None and shard_bytes > 4 * PART
    reader = await aiozarr.open_array_async(store, mode="r")  # no index cached

    asked_at_decode: list[int] = []  # requests the emulator had received, per decode

    def progress(done: int, total: int) -> None:
        asked_at_decode.append(emulator.stats()["requests"])

    emulator.set_network(bandwidth_mbps=4)  # 64 KiB parts take 16 ms each
    emulator.reset_stats()
    with config.set(max_request_bytes=PART, parts_per_object=2, hedge_reads=False):
        got = await reader.getitem(..., progress=progress)
    assert np.array_equal(got, data)
    # The index and 2 parts ahead of it (one wave), then the other 6 parts of 64 KiB,
    # 2 at a time.
    assert emulator.stats()["requests"] == 1 + data.nbytes // PART
    # Decoding began while the last 4 parts had not been asked for.
    assert asked_at_decode[0] <= 5, asked_at_decode
