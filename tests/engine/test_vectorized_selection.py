"""Points, masks and blocks: values as numpy gives them, and batched like every other read."""

from __future__ import annotations

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import BoundsCheckError, SelectionError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore

SHAPE = (12, 10)
DATA = np.arange(120, dtype="int32").reshape(SHAPE)
LAYOUTS = {
    "v3": {"chunks": (3, 4)},
    "v3-sharded": {"chunks": (3, 2), "shards": (6, 4)},
    "v2": {"chunks": (3, 4), "zarr_format": 2},
}
ROWS, COLS = np.array([0, 11, 5, 5, 3]), np.array([9, 0, 4, 4, -1])
MASK = (DATA % 7 == 0) | (DATA > 110)


@pytest.fixture(params=list(LAYOUTS))
def arr(request) -> aiozarr.Array:
    array = aiozarr.create_array(
        MemoryStore(), shape=SHAPE, dtype="int32", **LAYOUTS[request.param]
    )
    array[...] = DATA
    return array


def test_integer_arrays_on_every_axis_select_points_as_numpy(arr: aiozarr.Array) -> None:
    assert np.array_equal(arr[[1, 3], [2, 4]], DATA[[1, 3], [2, 4]])  # two points, not 2 x 2
    assert np.array_equal(arr[ROWS, COLS], DATA[ROWS, COLS])
    grid = (np.array([[0, 11], [5, 6]]), np.array([[1], [9]]))  # broadcast to 2 x 2
    assert np.array_equal(arr[grid], DATA[grid])
    assert np.array_equal(arr[3, [1, 2, 3]], DATA[3, [1, 2, 3]])
    assert arr[[], []].shape == (0,)


def test_vindex_and_coordinate_selection(arr: aiozarr.Array) -> None:
    assert np.array_equal(arr.vindex[ROWS, COLS], DATA[ROWS, COLS])
    assert np.array_equal(arr.get_coordinate_selection((ROWS, COLS)), DATA[ROWS, COLS])
    assert np.array_equal(arr.vindex[MASK], DATA[MASK])
    assert np.array_equal(arr.get_mask_selection(MASK), DATA[MASK])
    assert np.array_equal(arr[MASK], DATA[MASK])


def test_one_array_among_slices_is_orthogonal(arr: aiozarr.Array) -> None:
    assert np.array_equal(arr[[4, 1], 2:5], DATA[[4, 1], 2:5])
    assert np.array_equal(arr[:, [True] * 5 + [False] * 5], DATA[:, :5])
    rows = np.array([True, False] * 6)
    assert np.array_equal(arr[rows, [1, 2]], DATA[np.ix_(rows, [1, 2])])  # as zarr-python


def test_blocks_are_shards_or_chunks(arr: aiozarr.Array) -> None:
    rows, cols = arr.shards or arr.chunks
    assert np.array_equal(arr.blocks[1], DATA[rows : 2 * rows])
    assert np.array_equal(arr.blocks[-1, 1:], DATA[-(12 % rows or rows) :, cols:])
    assert np.array_equal(arr.get_block_selection((0, 0)), DATA[:rows, :cols])
    with pytest.raises(SelectionError, match="step 1"):
        arr.blocks[::2]
    with pytest.raises(BoundsCheckError):
        arr.blocks[99]


def test_writes_through_points_masks_and_blocks(arr: aiozarr.Array) -> None:
    expected = DATA.copy()
    arr.vindex[ROWS, COLS] = -1
    expected[ROWS, COLS] = -1
    arr[[2, 7], [3, 8]] = [500, 600]
    expected[[2, 7], [3, 8]] = [500, 600]
    arr.set_coordinate_selection(([0, 1], [0, 1]), np.array([7, 8]))
    expected[[0, 1], [0, 1]] = [7, 8]
    arr[MASK] = np.arange(MASK.sum())
    expected[MASK] = np.arange(MASK.sum())
    arr.set_mask_selection(~MASK & (DATA < 20), 0)
    expected[~MASK & (DATA < 20)] = 0
    arr.blocks[1, 1] = 9
    rows, cols = arr.shards or arr.chunks
    expected[rows : 2 * rows, cols : 2 * cols] = 9
    assert np.array_equal(arr[...], expected)


async def test_async_twins(arr: aiozarr.Array) -> None:
    a = arr.async_array
    assert np.array_equal(await a.getitem(([1, 3], [2, 4])), DATA[[1, 3], [2, 4]])
    assert np.array_equal(await a.get_vectorized_selection(MASK), DATA[MASK])
    await a.set_vectorized_selection((ROWS, COLS), 42)
    assert np.array_equal(await a.get_coordinate_selection((ROWS, COLS)), [42] * 5)
    await a.set_mask_selection(MASK, 1)
    assert np.array_equal(await a.get_mask_selection(MASK), np.ones(MASK.sum()))


def test_refused_selections_say_what_to_use(arr: aiozarr.Array) -> None:
    with pytest.raises(IndexError, match=r"oindex.*vindex"):
        arr[[1, 2], [1, 2], ...]  # numpy reads points here; zarr-python refuses too
    with pytest.raises(SelectionError, match="cannot be broadcast"):
        arr[[1, 2], [1, 2, 3]]
    with pytest.raises(BoundsCheckError, match="index 12 is out of bounds for axis 0"):
        arr.vindex[[12], [0]]
    with pytest.raises(SelectionError, match=r"boolean array of the array's shape \(12, 10\)"):
        arr.get_mask_selection(np.ones((3, 3), bool))
    with pytest.raises(SelectionError, match="vindex takes"):
        arr.vindex[[1, 2], :]


# -- request counts -------------------------------------------------------------------------------


async def test_points_in_cold_shards_cost_one_index_batch_and_one_data_batch() -> None:
    counting = CountingStore(MemoryStore())
    await (
        await aiozarr.create_array_async(
            counting, "a", shape=SHAPE, dtype="int32", chunks=(3, 2), shards=(6, 4)
        )
    ).setitem(..., DATA)
    arr = await aiozarr.open_array_async(counting, "a")
    counting.reset()
    rows, cols = np.array([0, 1, 7, 11, 11]), np.array([0, 1, 5, 9, 8])  # 3 shards, 3 chunks
    assert np.array_equal(await arr.get_vectorized_selection((rows, cols)), DATA[rows, cols])
    index_batch, data_batch = counting.batches
    assert len(index_batch) == 3 and all(r.byte_range.is_suffix for r in index_batch)
    assert len(data_batch) == 3  # one range per inner chunk touched, all at once
    assert counting.counts["get"] == 6


async def test_a_mask_over_many_chunks_is_one_batch() -> None:
    counting = CountingStore(MemoryStore())
    arr = await aiozarr.create_array_async(counting, "a", shape=SHAPE, dtype="int32", chunks=(3, 4))
    await arr.setitem(..., DATA)
    counting.reset()
    mask = np.zeros(SHAPE, bool)
    mask[::3, ::4] = True  # one element in each of the 4 x 3 chunks
    assert np.array_equal(await arr.get_mask_selection(mask), DATA[mask])
    [batch] = counting.batches
    assert len(batch) == 12 and counting.counts["get"] == 12
    counting.reset()
    await arr.set_mask_selection(mask, -5)  # one batch of reads, then one write per chunk
    [reads] = counting.batches
    assert len(reads) == 12 and counting.counts["set"] == 12
    assert np.array_equal(await arr.getitem(mask), [-5] * 12)
