"""Memory stores over one dict share its values' versions: each store object had a table
of its own, so a value rewritten through one kept, to the other, the version that one
had written itself."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import VersionConflictError
from aiozarr.storage.backends.memory import MemoryStore


def test_a_shard_rewritten_through_another_store_over_the_dict_reads_new() -> None:
    data: dict[str, bytes] = {}
    first, second = MemoryStore(data), MemoryStore(data)
    values = np.arange(64, dtype="i4").reshape(8, 8)
    aiozarr.create_array(first, data=values, chunks=(2, 2), shards=(4, 4))
    reader = aiozarr.open_array(second, mode="r+")
    reader[0:4, 0:4] = 1  # numbered by `second`
    assert reader[0:2, 0:2].tolist() == [[1, 1], [1, 1]]  # its index now held by the handle
    new = np.arange(16, dtype="i4").reshape(4, 4) + 100
    aiozarr.open_array(first, mode="r+")[0:4, 0:4] = new  # other sizes, through `first`
    # the held index is of the old shard: seen as stale, not matched to the new bytes
    np.testing.assert_array_equal(reader[0:2, 0:2], new[0:2, 0:2])


async def test_a_conditional_write_sees_a_write_through_another_store() -> None:
    data: dict[str, bytes] = {}
    first, second = MemoryStore(data), MemoryStore(data)
    await first.set("k", b"1")
    answer = await first.get_versioned("k")
    assert answer is not None
    await second.set("k", b"2")
    with pytest.raises(VersionConflictError, match="'k'"):
        await first.set_if("k", b"3", answer[1])
    assert bytes(data["k"]) == b"2"


def test_a_dict_outliving_its_stores_is_versioned_afresh() -> None:
    data: dict[str, bytes] = {}
    aiozarr.create_array(MemoryStore(data), data=np.arange(4, dtype="i4"), chunks=(2,))
    gc.collect()
    store = MemoryStore(data)  # the table went with the stores: values without a version
    assert store.get_inline("c/0") is not None
    assert store.get_inline("c/0")[1] is None  # type: ignore[index]
    aiozarr.open_array(store, mode="r+")[0:2] = 7
    assert aiozarr.open_array(MemoryStore(data))[:].tolist() == [7, 7, 2, 3]
