"""A shard holding bytes no index entry points to is read whole, as TensorStore and
zarr-python read it.

A writer that overwrites an inner chunk by appending its new bytes and rewriting the
index (zarrs' partial encoder) leaves the old bytes in place (docs/decisions/formats.md:
no fault). Uncompressed, such a shard is larger than its chunks and index can be, and a
read needing it whole refused it (`ValueTooLargeError`): the read now starts over with
the shard read by its index, each chunk still bounded by its codecs.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore

EXPECTED = np.array([100, 101, 2, 3, 4, 5, 6, 7], dtype="<u2")


def appended_shard(store: Any) -> aiozarr.Array:
    """An array of one uncompressed shard of 4 inner chunks whose chunk 0 was rewritten
    by appending its new bytes and rewriting the index (`EXPECTED` its values)."""
    arr = aiozarr.create_array(
        store, shape=(8,), chunks=(2,), shards=(8,), dtype="<u2", compressors=None
    )
    arr[...] = np.arange(8, dtype="<u2")
    stored = arr.async_array.stored
    layout = stored.layout
    assert layout is not None
    raw = bytes(asyncio.run(stored.store.get("c/0")))
    data = raw[: -layout.index_size]
    table = np.array(layout.index_of_shard(raw, "c/0").offsets_and_lengths, dtype="<u8")
    new = np.array([100, 101], dtype="<u2").tobytes()
    table[0] = (len(data), len(new))
    index = bytes(layout.index_chain.encode(table.reshape(4, 2)))
    asyncio.run(stored.store.set("c/0", data + new + index))
    assert struct.unpack_from("<QQ", index) == (len(data), len(new))
    return aiozarr.open_array(store)


def test_a_local_shard_with_unused_bytes_reads_whole(tmp_path: Path) -> None:
    arr = appended_shard(str(tmp_path / "a.zarr"))
    assert np.array_equal(arr[...], EXPECTED)
    assert np.array_equal(arr[...], EXPECTED)  # the handle reads it by its index now
    assert np.array_equal(arr[1:7], EXPECTED[1:7])


def test_an_in_memory_shard_with_unused_bytes_reads_whole() -> None:
    arr = appended_shard(MemoryStore())
    done, value = arr.async_array.getitem_inline(...)
    assert done and np.array_equal(value, EXPECTED)


def test_read_many_reads_a_shard_with_unused_bytes(tmp_path: Path) -> None:
    arr = appended_shard(str(tmp_path / "a.zarr"))
    other = aiozarr.create_array(str(tmp_path / "b.zarr"), shape=(3,), dtype="i1")
    other[...] = [1, 2, 3]
    got, rest = aiozarr.read_many([(arr, ...), (other, ...)])
    assert np.array_equal(got, EXPECTED) and rest.tolist() == [1, 2, 3]


@pytest.mark.parametrize("length", [5, 3])
def test_an_inner_chunk_past_its_bound_is_still_refused(tmp_path: Path, length: int) -> None:
    """The retry reads the shard by its index: an entry whose length the codecs cannot
    produce is still an error, never values."""
    arr = appended_shard(str(tmp_path / "a.zarr"))
    stored = arr.async_array.stored
    layout = stored.layout
    assert layout is not None
    raw = bytes(asyncio.run(stored.store.get("c/0")))
    table = np.array(layout.index_of_shard(raw, "c/0").offsets_and_lengths, dtype="<u8")
    table[1] = (0, length)
    index = bytes(layout.index_chain.encode(table.reshape(4, 2)))
    asyncio.run(stored.store.set("c/0", raw[: -layout.index_size] + index))
    with pytest.raises(aiozarr.errors.AiozarrError, match="c/0"):
        aiozarr.open_array(str(tmp_path / "a.zarr"))[...]


def _with_unused_bytes(store: Any, unused: int) -> aiozarr.Array:
    """`appended_shard` with `unused` more bytes no entry points to before its index."""
    arr = appended_shard(store)
    stored = arr.async_array.stored
    layout = stored.layout
    assert layout is not None
    raw = bytes(asyncio.run(stored.store.get("c/0")))
    shard = raw[: -layout.index_size] + bytes(unused) + raw[-layout.index_size :]
    asyncio.run(stored.store.set("c/0", shard))
    return aiozarr.open_array(store)


@pytest.mark.parametrize("unused", [0, 4 << 20])
def test_a_partial_write_merges_into_a_shard_with_unused_bytes_by_its_index(
    tmp_path: Path, unused: int
) -> None:
    """The write reads the shard it merges into as a read does: whole within its bound,
    else by its index (each inner chunk within its codecs' bound). It read any size
    whole: 4 MiB no entry points to were read to merge 2 bytes in."""
    store = CountingStore(LocalStore(tmp_path))
    arr = _with_unused_bytes(store, unused)
    before = store.bytes_read
    arr[2:3] = 55
    assert store.bytes_read - before < 200  # the index and 3 inner chunks of 4 bytes
    expected = EXPECTED.copy()
    expected[2] = 55
    assert np.array_equal(aiozarr.open_array(str(tmp_path))[...], expected)
    arr[0:1] = 7  # the handle goes by the index from now on
    expected[0] = 7
    assert np.array_equal(aiozarr.open_array(str(tmp_path))[...], expected)


def test_shards_merged_into_by_their_indexes_are_read_in_two_batches() -> None:
    """Every index in one batch, then every stored inner chunk in the next, as a read
    asks for them: not two requests per shard, one after the other."""
    store = CountingStore(MemoryStore())
    arr = aiozarr.create_array(
        store, shape=(16,), chunks=(2,), shards=(8,), dtype="<u2", compressors=None
    )
    values = np.arange(16, dtype="<u2")
    arr[...] = values
    stored = arr.async_array.stored
    layout = stored.layout
    assert layout is not None
    for key in ("c/0", "c/1"):  # bytes no entry points to: past the shard's bound
        raw = bytes(asyncio.run(stored.store.get(key)))
        padded = raw[: -layout.index_size] + bytes(64) + raw[-layout.index_size :]
        asyncio.run(stored.store.set(key, padded))
    arr = aiozarr.open_array(store)
    arr[0:1] = 7  # refused whole: the handle goes by the indexes from now on
    values[0] = 7
    store.reset()
    arr[5:11] = 9  # parts of both shards
    values[5:11] = 9
    assert len(store.batches) == 2
    assert [len(b) for b in store.batches] == [2, 8]  # two indexes; their stored chunks
    assert np.array_equal(aiozarr.open_array(store)[...], values)
