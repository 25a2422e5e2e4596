"""A write or delete through aiozarr that fails may have changed the store still (its
answer lost after the request was sent): the chunk cache drops what it held of those
keys all the same, as a write that succeeds makes it do."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.engine.entry import ChunkMove, move_chunks
from aiozarr.errors import StoreError
from aiozarr.nodes.hierarchy import RESERVED_NAMES
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.protocol import Buffer

VALUES = np.arange(1, 17, dtype="i4")


class LostAnswers(LocalStore):
    """Deletes and writes that take effect, then fail as a reset connection would."""

    async def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        await super().delete_many(keys)
        if not all(key.rpartition("/")[2] in RESERVED_NAMES for key in keys):  # chunks
            raise StoreError("connection reset after the deletes were sent")

    async def delete_prefix(self, prefix: str) -> None:
        await super().delete_prefix(prefix)
        raise StoreError("connection reset after the delete was sent")

    async def set_many(self, items: Iterable[tuple[str, Buffer]]) -> None:
        await super().set_many(items)
        raise StoreError("connection reset after the writes were sent")


def _cached(path: Path, name: str = "") -> tuple[aiozarr.Array, aiozarr.Array]:
    """A handle that caches every chunk of the array at `name`, and one that caches none."""
    store = LostAnswers(path)
    cached = aiozarr.open_array(store, name, mode="r", cache_bytes=1 << 20)
    np.testing.assert_array_equal(cached[:], VALUES)
    return cached, aiozarr.open_array(store, name, mode="r")


def test_a_shrink_whose_deletes_fail(tmp_path: Path) -> None:
    aiozarr.create_array(LocalStore(tmp_path), data=VALUES, chunks=(4,), fill_value=0)
    cached, uncached = _cached(tmp_path)
    with pytest.raises(StoreError):
        aiozarr.open_array(LostAnswers(tmp_path), mode="r+").resize(6)
    np.testing.assert_array_equal(uncached[8:], np.zeros(8))  # deleted all the same
    np.testing.assert_array_equal(cached[8:], uncached[8:])


@pytest.mark.parametrize("how", ["overwrite", "delitem"])
def test_a_node_delete_that_fails(tmp_path: Path, how: str) -> None:
    aiozarr.create_array(LocalStore(tmp_path), "a", data=VALUES, chunks=(4,), fill_value=0)
    cached, uncached = _cached(tmp_path, "a")
    store = LostAnswers(tmp_path)
    with pytest.raises(StoreError):
        if how == "overwrite":
            aiozarr.create_array(store, "a", shape=16, dtype="i4", fill_value=0, overwrite=True)
        else:
            del aiozarr.open_group(store, mode="r+")["a"]
    # the node's documents went first, then its chunks, whose answer was lost
    np.testing.assert_array_equal(uncached[:], np.zeros(16))
    np.testing.assert_array_equal(cached[:], uncached[:])


async def test_chunks_moved_by_a_write_that_fails(tmp_path: Path) -> None:
    source = tmp_path / "source"
    aiozarr.create_array(LocalStore(source), data=-VALUES, chunks=(4,), fill_value=0)
    aiozarr.create_array(LocalStore(tmp_path / "target"), data=VALUES, chunks=(4,), fill_value=0)
    cached, uncached = _cached(tmp_path / "target")
    chain = cached.async_array.stored.chain
    moves = [ChunkMove(f"c/{i}", f"c/{i}", chain, chain, lambda _: True, 16) for i in range(4)]
    with pytest.raises(StoreError):
        await move_chunks(LocalStore(source), LostAnswers(tmp_path / "target"), moves)
    np.testing.assert_array_equal(uncached[:], -VALUES)
    np.testing.assert_array_equal(cached[:], uncached[:])
