"""A shard index entry is either empty (offset and length both 2**64 - 1) or a byte
range an object can hold: one field marked empty, a range ending past 2**63 (or past
the shard, where its size is known), or one overlapping another's is a `CodecError`
naming the shard and the inner chunk, "corrupt shard index", never a store's or a
codec's misleading error."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import aiozarr
from aiozarr.codecs.sharding import EMPTY, ShardIndex
from aiozarr.errors import CodecError
from aiozarr.storage.backends.memory import MemoryStore


def _index(*entries: tuple[int, int]) -> ShardIndex:
    return ShardIndex(np.array(entries, dtype=np.uint64).reshape(2, 2, 2))


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ((EMPTY, 2), "only one field marked empty"),
        ((0, EMPTY), "only one field marked empty"),
        ((2**63, 2), "past 2\\*\\*63"),
        ((2**64 - 4, 8), "past 2\\*\\*63"),  # offset + length wraps past 2**64
        ((2**62, 2**62), "past 2\\*\\*63"),
        ((1, 2), "overlapping another inner chunk"),  # the second byte of (0, 0)'s two
    ],
)
def test_a_corrupt_entry_names_the_shard_and_the_inner_chunk(
    entry: tuple[int, int], why: str
) -> None:
    index = _index((0, 2), (EMPTY, EMPTY), entry, (2, 2))
    with pytest.raises(
        CodecError, match=rf"shard 'c/0/0': corrupt shard index: inner chunk \(1, 0\).*{why}"
    ):
        index.check_entries("c/0/0")


def test_valid_entries_pass() -> None:
    _index((0, 2), (EMPTY, EMPTY), (2, 2), (2**62, 2**62 - 1)).check_entries("c/0/0")
    _index((0, 2), (EMPTY, EMPTY), (0, 2), (2, 2)).check_entries("c/0/0")  # one range, twice


@pytest.mark.parametrize(
    ("entries", "where"),
    [
        (((2, 1), (EMPTY, EMPTY), (3, 1), (3, 2)), r"\(1, 1\)"),  # past the end
        (((1, 2), (EMPTY, EMPTY), (2, 1), (3, 1)), r"\(0, 0\)"),  # before the start
        (((2, 2), (EMPTY, EMPTY), (5, 0), (3, 1)), r"\(1, 0\)"),  # empty, past the end
    ],
)
def test_an_entry_outside_the_chunk_bytes_names_the_inner_chunk(
    entries: tuple[tuple[int, int], ...], where: str
) -> None:
    with pytest.raises(CodecError, match=rf"corrupt shard index: inner chunk {where}.*, why"):
        _index(*entries).check_within(2, 4, "c/0/0", "why")
    _index((2, 2), (EMPTY, EMPTY), (4, 0), (3, 1)).check_within(2, 4, "c/0/0", "why")


def _forged(change: Callable[[np.ndarray], None]) -> tuple[MemoryStore, bytes]:
    """An array "a" of 0..7 in one shard of four 2-byte inner chunks (no compression),
    its index changed by `change` (the (4, 2) table of offsets and lengths): the store
    and the shard's bytes."""
    store = MemoryStore()
    arr = aiozarr.create_array(
        store, "a", shape=(8,), chunks=(2,), shards=(8,), dtype="u1", fill_value=7, compressors=None
    )
    arr[:] = np.arange(8, dtype="u1")
    shard = bytearray(store.data["a/c/0"])  # payload (8 bytes), then the index and its crc
    table = np.frombuffer(bytes(shard[8:-4]), dtype="<u8").reshape(4, 2).copy()
    change(table)
    index_bytes = arr._async.stored.layout.index_chain.encode(table)
    store.data["a/c/0"] = forged = bytes(shard[:8]) + bytes(index_bytes)
    return store, forged


def test_a_read_through_a_one_sided_empty_entry_is_refused_as_corrupt() -> None:
    store, _ = _forged(lambda table: table.__setitem__((1, 0), EMPTY))  # length kept
    with pytest.raises(CodecError, match=r"'a/c/0': corrupt shard index: inner chunk \(1,\)"):
        aiozarr.open_array(store, "a")[:]


def test_a_zero_length_entry_is_not_written_back_as_the_fill_value() -> None:
    """An inner chunk stored in no bytes reads as corrupt; a write to another inner chunk
    of its shard is refused, not a rewrite that leaves it empty (the fill value)."""
    store, corrupt = _forged(lambda table: table.__setitem__((1, 1), 0))  # (1,): no bytes
    arr = aiozarr.open_array(store, "a")
    with pytest.raises(CodecError, match=r"'a/c/0'"):
        arr[2:4]
    with pytest.raises(CodecError, match=r"'a/c/0': corrupt shard index: inner chunk \(1,\)"):
        arr[6] = 0
    assert bytes(store.data["a/c/0"]) == corrupt
    arr[2:4] = 1  # a write that replaces the inner chunk whole mends it
    np.testing.assert_array_equal(arr[:], [0, 1, 1, 1, 4, 5, 6, 7])


def test_a_read_through_overlapping_entries_is_refused_as_corrupt() -> None:
    """Without compression an inner chunk whose range starts inside another's would read
    that one's bytes, shifted, as its values."""
    # inner chunk (2,) from the second byte of (1,)
    store, _ = _forged(lambda table: table.__setitem__(2, (3, 2)))
    arr = aiozarr.open_array(store, "a")
    for selection in (slice(4, 6), slice(0, 2), slice(None)):
        with pytest.raises(CodecError, match=r"'a/c/0': corrupt shard index: inner chunk \(2,\)"):
            arr[selection]
