"""The selections of one `read_many` read each object from one version. A selection that
needs a whole shard reads it in one request, another that needs part of it reads its
index: two requests, and another writer between them left the two selections with two
versions of the shard (each right on its own). Such a read now starts over, as one read
whose index went stale does. So does one whose selections were served a chunk from the
cache and from its new bytes (`cache_recheck=True`, two checks of it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import numpy as np
import pytest

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.protocol import Buffer, Unchanged, Version, Versioned
from aiozarr.storage.protocol.wrapper import WrapperStore

OLD = np.arange(1, 17, dtype="i4")
NEW = np.arange(101, 117, dtype="i4")
SHARD = "c/0"


class RewrittenAfterItsWholeRead(WrapperStore):
    """Ranges of `SHARD` (its index, its chunks) wait until it has been read whole, which
    another writer follows by putting `new` there: the whole read is of the old version,
    every range of the new one."""

    def __init__(self, inner: LocalStore, new: bytes) -> None:
        super().__init__(inner)
        self.new: bytes | None = new
        self._rewritten = anyio.Event()

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        if key != SHARD:
            return await self.inner.read(key, byte_range, max_bytes)
        if byte_range is not None:
            await self._rewritten.wait()
            return await self.inner.read(key, byte_range, max_bytes)
        answer = await self.inner.read(key, None, max_bytes)
        if self.new is not None:
            new, self.new = self.new, None
            await self.inner.set(key, new)  # not through aiozarr's engine: another writer
            self._rewritten.set()
        return answer

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        if key == SHARD:
            await self._rewritten.wait()
        return await self.inner.read_ranges(key, byte_ranges, max_bytes)


def _shard_bytes(path: Path, values: np.ndarray) -> bytes:
    aiozarr.create_array(LocalStore(path), data=values, chunks=(2,), shards=(16,))
    return (path / SHARD).read_bytes()


@pytest.mark.parametrize(
    "whole_first", [True, False], ids=["whole-listed-first", "part-listed-first"]
)
def test_a_shard_rewritten_between_two_selections_requests_is_read_from_one_version(
    tmp_path: Path, whole_first: bool
) -> None:
    new = _shard_bytes(tmp_path / "new", NEW)
    _shard_bytes(tmp_path / "data", OLD)
    store = RewrittenAfterItsWholeRead(LocalStore(tmp_path / "data"), new)
    arr = aiozarr.open_array(store, mode="r")
    whole, part = (arr, slice(0, 16)), (arr, slice(4, 6))  # all of the shard; 2 elements
    got = aiozarr.read_many([whole, part] if whole_first else [part, whole])
    values = np.concatenate(got if whole_first else got[::-1])
    assert store.new is None  # the shard was rewritten during the read
    # the whole read, of the old version, was the one the read started over for
    np.testing.assert_array_equal(values, np.concatenate([NEW, NEW[4:6]]))


class RewrittenAfterItsFirstCheck(WrapperStore):
    """Conditional reads of `SHARD` (a chunk here) are answered one at a time, and the
    first is followed by another writer putting `new` there."""

    def __init__(self, inner: LocalStore, new: bytes) -> None:
        super().__init__(inner)
        self.new: bytes | None = new
        self._turns = anyio.Lock()

    async def read_if_changed(
        self, key: str, byte_range: ByteRange | None, version: Version, max_bytes: int | None
    ) -> Versioned | Unchanged | None:
        async with self._turns:
            answer = await self.inner.read_if_changed(key, byte_range, version, max_bytes)
            if key == SHARD and self.new is not None:
                new, self.new = self.new, None
                await self.inner.set(key, new)
            return answer


def test_a_chunk_rechecked_by_two_selections_is_read_from_one_version(tmp_path: Path) -> None:
    """Under `True` each selection rechecked the cached chunk: the first was told it was
    unchanged and served it from the cache, the second, after another writer, got its
    new bytes; one chunk came back old in one output and new in the other."""
    for name, values in (("new", NEW), ("data", OLD)):
        aiozarr.create_array(LocalStore(tmp_path / name), data=values, chunks=(16,))
    store = RewrittenAfterItsFirstCheck(
        LocalStore(tmp_path / "data"), (tmp_path / "new" / SHARD).read_bytes()
    )
    arr = aiozarr.open_array(store, mode="r", cache_bytes=1 << 20, cache_recheck=True)
    np.testing.assert_array_equal(arr[:], OLD)  # cached
    first, second = aiozarr.read_many([(arr, slice(0, 8)), (arr, slice(8, 16))])
    assert store.new is None  # rewritten between the two checks
    np.testing.assert_array_equal(np.concatenate([first, second]), NEW)
