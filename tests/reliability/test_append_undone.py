"""An append commits the new shape, then writes its rows: a write that failed or was
cancelled left the array grown with fill values where the rows should be, and running the
append again put its rows after that band. The growth is now taken back, unless another
writer changed the shape after it (whose rows must stay)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import anyio
import numpy as np
import pytest
from tests.reliability.interleaving import BeforeWrites, OtherProcess

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store

pytestmark = pytest.mark.timeout(60)


async def _array(emulator: Emulator, name: str) -> aiozarr.AsyncArray:
    arr = await aiozarr.create_array_async(
        emulator.s3_url(name),
        shape=(4, 2),
        dtype="i4",
        chunks=(2, 2),
        fill_value=-1,
        storage_options=emulator.storage_options(),
    )
    await arr.setitem(..., np.zeros((4, 2), dtype="i4"))
    return arr


async def _stored_shape(emulator: Emulator, name: str) -> tuple[int, ...]:
    url, options = emulator.s3_url(name), emulator.storage_options()
    return (await aiozarr.open_array_async(url, mode="r", storage_options=options)).shape


async def test_a_failed_append_takes_its_growth_back(emulator: Emulator, prefix: str) -> None:
    name = f"{prefix}/f.zarr"
    arr = await _array(emulator, name)
    emulator.inject("status", status=403, key_glob=f"{name}/c/*", methods=["PUT"])
    with pytest.raises(StoreError):
        await arr.append(np.ones((4, 2), dtype="i4"))
    emulator.clear_faults()
    assert await _stored_shape(emulator, name) == (4, 2)
    assert arr.shape == (4, 2)
    await arr.append(np.ones((4, 2), dtype="i4"))  # run again: right after the old end
    assert (await arr.getitem(...)).tolist() == [[0, 0]] * 4 + [[1, 1]] * 4


async def test_an_append_whose_undo_fails_says_the_array_may_stay_grown(
    emulator: Emulator, prefix: str
) -> None:
    """The new row's chunk (holding the last old row too) cannot be written, nor can the
    undo fill the new row's place in it: the growth stays. The error said only which
    chunks were not written ("each holds its old value"), and an append run again put
    its rows after a band of fill values; it now says the array may stay grown."""
    name = f"{prefix}/u.zarr"
    url, options = emulator.s3_url(name), emulator.storage_options()
    arr = await aiozarr.create_array_async(
        url, shape=(3, 2), dtype="i4", chunks=(2, 2), fill_value=-1, storage_options=options
    )
    await arr.setitem(..., np.zeros((3, 2), dtype="i4"))
    emulator.inject("status", status=403, key_glob=f"{name}/c/*", methods=["PUT"])
    with pytest.raises(StoreError) as raised:
        await arr.append(np.ones((1, 2), dtype="i4"))
    emulator.clear_faults()
    assert await _stored_shape(emulator, name) == (4, 2)  # the undo failed
    notes = " ".join(getattr(raised.value, "__notes__", []))
    assert "may stay grown to (4, 2)" in notes
    assert "taking the append's growth back failed" in notes


async def test_a_cancelled_append_takes_its_growth_back(emulator: Emulator, prefix: str) -> None:
    name = f"{prefix}/c.zarr"
    arr = await _array(emulator, name)
    emulator.inject("late", key_glob=f"{name}/c/*", methods=["PUT"], delay_s=1.0)
    with anyio.move_on_after(0.3) as scope:
        await arr.append(np.ones((4, 2), dtype="i4"))
    assert scope.cancelled_caught
    emulator.clear_faults()
    assert await _stored_shape(emulator, name) == (4, 2)


async def test_a_growth_another_append_built_on_is_kept(emulator: Emulator, prefix: str) -> None:
    """Taking the first append's growth back would cut the second one's rows off."""
    name = f"{prefix}/k.zarr"
    arr = await _array(emulator, name)
    url, options = emulator.s3_url(name), emulator.storage_options()
    other = await aiozarr.open_array_async(url, storage_options=options)

    class Failing(Exception):
        pass

    async def rows_then_fail(region: object, values: object) -> None:
        await other.append(np.full((2, 2), 7, dtype="i4"))  # lands after this growth
        raise Failing

    arr.setitem = rows_then_fail  # type: ignore[method-assign]
    with config.set(retry_base_delay_s=0.001), pytest.raises(Failing):
        await arr.append(np.ones((4, 2), dtype="i4"))
    assert await _stored_shape(emulator, name) == (10, 2)
    values = await (await aiozarr.open_array_async(url, storage_options=options)).getitem(...)
    assert values[8:].tolist() == [[7, 7]] * 2


def test_an_append_the_sync_timeout_cancels_is_undone_before_the_call_returns(
    emulator: Emulator, prefix: str
) -> None:
    """`sync_timeout_s` cancels the append's task: the call returned as soon as it had
    asked for the cancel, before the task took its growth back, so the array read grown
    and an append run again at once raced the undo, leaving a band of fill values."""
    name = f"{prefix}/s.zarr"
    url, options = emulator.s3_url(name), emulator.storage_options()
    arr = aiozarr.create_array(
        url, shape=(4, 2), dtype="i4", chunks=(2, 2), fill_value=-1, storage_options=options
    )
    arr[...] = np.zeros((4, 2), dtype="i4")
    emulator.inject("late", key_glob=f"{name}/c/*", methods=["PUT"], delay_s=30.0)  # rows
    # The shape's writes (the growth, then its undo) each held back a while.
    emulator.inject("late", count=2, key_glob=f"{name}/zarr.json", methods=["PUT"], delay_s=0.5)
    with config.set(sync_timeout_s=2.0), pytest.raises(TimeoutError):
        arr.append(np.ones((4, 2), dtype="i4"))
    assert aiozarr.open_array(url, mode="r", storage_options=options).shape == (4, 2)
    emulator.clear_faults()
    arr.append(np.ones((4, 2), dtype="i4"))  # run again at once: right after the old end
    again = aiozarr.open_array(url, mode="r", storage_options=options)
    assert again[...].tolist() == [[0, 0]] * 4 + [[1, 1]] * 4


class OtherAppendsDuringUndo(BeforeWrites):
    """The wrapped store, running `other()` (another writer's append) once, just before
    an append's undo first writes or deletes anything: chunk `key` or, past the append's
    own growth, the metadata."""

    def __init__(self, inner: Store, key: str, other: Callable[[], Awaitable[object]]) -> None:
        super().__init__(inner)
        self.key, self.other, self.grown = key, other, False

    async def before(self, key: str) -> None:
        if key == "zarr.json" and not self.grown:
            self.grown = True  # the append's growth: the undo comes after it
        elif self.other is not None and key in (self.key, "zarr.json"):
            other, self.other = self.other, None
            await other()

    async def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            await self.before(key)
        await super().delete_many(keys)


async def test_an_undone_append_keeps_the_rows_another_append_wrote_past_it() -> None:
    """The undo of an append whose rows failed (6 -> 9 rows, chunks of 4) cleared what
    it cut before committing the shape: it deleted chunk 2 (rows 8-11) whole, though rows
    9-11 were past its growth, and another writer had grown the array to 12 and written
    its rows there meanwhile. The undo's commit then found that growth and kept the
    shape: the other append had returned, its rows read as fill values."""
    base = MemoryStore()
    arr = await aiozarr.create_array_async(base, shape=(6,), dtype="i4", chunks=(4,), fill_value=-1)
    await arr.setitem(..., np.arange(6, dtype="i4"))
    other = await aiozarr.open_array_async(OtherProcess(base), mode="r+")
    during = OtherAppendsDuringUndo(base, "c/2", lambda: other.append(np.full(3, 7, "i4")))
    mine = await aiozarr.open_array_async(during, mode="r+")

    class Failing(Exception):
        pass

    async def rows_fail(region: object, values: object) -> None:
        raise Failing

    mine.setitem = rows_fail  # type: ignore[method-assign]
    with config.set(retry_base_delay_s=0.001), pytest.raises(Failing):
        await mine.append(np.ones(3, dtype="i4"))
    assert during.other is None  # the other writer appended during the undo
    stored = await aiozarr.open_array_async(base, mode="r")
    assert (await stored.getitem(...)).tolist() == [0, 1, 2, 3, 4, 5, -1, -1, -1, 7, 7, 7]
