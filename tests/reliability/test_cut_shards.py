"""A shard with bytes cut out of it never reads as shifted values.

A copy that lost a block in the middle (a bad disk, a broken transfer, a tool that
rewrote it) keeps its index intact, so every inner chunk after the cut would read the
bytes of the next one, or the index's own, as its values: with no compression nothing
fails to decode. Wherever the reader knows the shard's size (a whole shard, a range's
answer from an object store, a file), an index that points outside the bytes where a
shard of that size holds its chunks is refused as corrupt, naming the shard, for any
read of it.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.reliability.locations import StoreFactory

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import CodecError
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Store

VALUES = np.arange(64, dtype="int32")  # 2 shards of 8 inner chunks of 4 (16 bytes each)
CUT = r"shard 'a/c/0': corrupt shard index: .*outside bytes .* \(the shard is cut short"


async def _array(store: Store, index_location: str) -> aiozarr.AsyncArray:
    sharding = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [4],
            # no compression: shifted bytes decode as values, nothing else would notice
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"},
            ],
            "index_location": index_location,
        },
    }
    arr = await aiozarr.create_array_async(
        store,
        "a",
        shape=VALUES.shape,
        dtype=VALUES.dtype,
        chunks=(32,),
        fill_value=0,
        serializer=sharding,
        compressors=None,
    )
    await arr.setitem(slice(None), VALUES)
    return arr


#: Where the first shard's chunks lie: after or before its index (8 * 16 + 4 bytes).
CHUNKS_AT = {"start": 132, "end": 0}


async def _cut(store: Store, start: int, stop: int | None) -> None:
    """Cut bytes `start`..`stop` out of the first shard (negative: from its end)."""
    data = bytes(await store.get("a/c/0"))
    start, stop, _ = slice(start, stop).indices(len(data))
    await store.set("a/c/0", data[:start] + data[stop:])


@pytest.mark.parametrize("index_location", ["start", "end"])
@pytest.mark.parametrize("make_store", ["memory", "local", "s3", "moto"], indirect=True)
async def test_a_shard_cut_in_the_middle_is_refused_by_every_read(
    make_store: StoreFactory, index_location: str
) -> None:
    store = make_store()
    await _array(store, index_location)
    at = CHUNKS_AT[index_location] + 40
    await _cut(store, at, at + 16)  # from the middle of the third chunk
    arr = await aiozarr.open_array_async(make_store(), "a")
    for selection in (slice(0, 4), slice(28, 32), slice(0, 32), slice(None)):
        with pytest.raises(CodecError, match=CUT):
            await arr.getitem(selection)
    np.testing.assert_array_equal(await arr.getitem(slice(32, 64)), VALUES[32:])  # intact


@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
async def test_a_shard_cut_short_behind_its_leading_index_is_refused(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    await _array(store, "start")
    await _cut(store, -20, None)  # its last chunk and a bit of the one before
    arr = await aiozarr.open_array_async(make_store(), "a")
    with pytest.raises(CodecError, match=CUT):
        await arr.getitem(slice(0, 4))  # a chunk the cut left whole


@pytest.mark.parametrize("index_location", ["start", "end"])
@pytest.mark.parametrize("make_store", ["memory"], indirect=True)
async def test_a_shard_cut_in_the_middle_is_refused_when_read_whole(
    make_store: StoreFactory, index_location: str
) -> None:
    """A value put into a memory store's dict directly has no version, so none that
    tells its size: read whole, the shard is its own size."""
    store = make_store()
    assert isinstance(store, MemoryStore)
    await _array(store, index_location)
    at = CHUNKS_AT[index_location] + 40
    data = bytes(store.data["a/c/0"])
    store.data["a/c/0"] = data[:at] + data[at + 16 :]
    arr = await aiozarr.open_array_async(store, "a")
    with pytest.raises(CodecError, match=CUT):
        await arr.getitem(slice(0, 32))


async def test_a_cut_shard_is_refused_over_plain_http(emulator: Emulator) -> None:
    prefix = "cut-over-http.zarr"
    store = from_url(emulator.s3_url(prefix), storage_options=emulator.storage_options())
    await _array(store, "end")
    await _cut(store, 40, 56)
    arr = await aiozarr.open_array_async(emulator.http_url(prefix), path="a")
    with pytest.raises(CodecError, match=CUT):
        await arr.getitem(slice(0, 4))


@pytest.mark.parametrize("index_location", ["start", "end"])
@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
async def test_a_shard_with_bytes_no_chunk_uses_still_reads(
    make_store: StoreFactory, index_location: str
) -> None:
    """Bytes beside the chunks that no entry points to (left by a writer that appends
    and rewrites its index) are no cut: the shard reads."""
    store = make_store()
    arr = await _array(store, index_location)
    await arr.setitem(slice(16, 32), 0)  # four chunks of fill, not stored: room for more
    expected = np.where(np.arange(64) // 16 == 1, 0, VALUES)
    data = bytes(await store.get("a/c/0"))
    layout = arr.stored.layout  # the index's size
    assert layout is not None
    index = layout.index_size
    if index_location == "start":
        padded = data + b"\xff" * 40  # dead bytes after the last chunk
    else:
        padded = data[:-index] + b"\xff" * 40 + data[-index:]  # dead bytes before the index
    await store.set("a/c/0", padded)
    reopened = await aiozarr.open_array_async(make_store(), "a")
    np.testing.assert_array_equal(await reopened.getitem(slice(None)), expected)
    np.testing.assert_array_equal(await reopened.getitem(slice(12, 16)), expected[12:16])
