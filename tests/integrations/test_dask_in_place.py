"""Writes through dask over the values they read: where one block reads what another
block replaces, `store` refuses (tasks run in any order: the values came out silently
wrong); where each block reads only what it writes, the update runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import aiozarr  # noqa: E402
from aiozarr.dask import (  # noqa: E402
    InPlaceWriteError,
    OverlappingWriteError,
    from_dask,
    store,
    to_dask,
)

DATA = np.arange(64, dtype="i4").reshape(8, 8)


def _array(where: Path, **options: Any) -> aiozarr.Array:
    array = aiozarr.create_array(
        where, shape=DATA.shape, dtype=DATA.dtype, chunks=(4, 4), **options
    )
    array[...] = DATA
    return array


MIXING: dict[str, Callable[[aiozarr.Array, Path], Any]] = {
    "reversed": lambda a, _: to_dask(a)[::-1],
    "rolled": lambda a, _: da.roll(to_dask(a), 4, axis=1),
    "transposed": lambda a, _: to_dask(a).T,
    "minus its sum": lambda a, _: to_dask(a) - to_dask(a).sum(),
    "from_array inline": lambda a, _: da.from_array(a, chunks=4, inline_array=True)[::-1],
    "map_blocks given it": lambda a, _: da.map_blocks(lambda b, _: b, to_dask(a), a),
    # another handle on the same array, opened read-only at its parent
    "opened again": lambda _, root: to_dask(aiozarr.open_array(root, "a.zarr", mode="r"))[:, ::-1],
}


@pytest.mark.parametrize("source", MIXING.values(), ids=MIXING.keys())
def test_a_block_reading_what_another_writes_is_refused(
    tmp_path: Path, source: Callable[[aiozarr.Array, Path], Any]
) -> None:
    """`store(to_dask(a)[::-1], a)` wrote [0..7, 7..0] in place of the reversed values."""
    array = _array(tmp_path / "a.zarr")
    with (
        dask.config.set(scheduler="synchronous"),
        pytest.raises(InPlaceWriteError, match=r"block \(.*reads \[.*and writes \[") as refused,
    ):
        store(source(array, tmp_path), array)
    assert isinstance(refused.value, OverlappingWriteError)
    assert "a.zarr" in str(refused.value)
    np.testing.assert_array_equal(array[...], DATA)  # refused before any task ran


def test_blocks_reading_only_what_they_write_update_in_place(tmp_path: Path) -> None:
    array = _array(tmp_path / "a.zarr")
    store(to_dask(array) * 2, array)
    np.testing.assert_array_equal(array[...], DATA * 2)
    store(to_dask(array, chunks=2).rechunk(4) // 2, array)  # smaller reads, one block
    np.testing.assert_array_equal(array[...], DATA)
    sharded = _array(tmp_path / "s.zarr", shards=(4, 8))
    store(to_dask(sharded) + 1, sharded)
    np.testing.assert_array_equal(sharded[...], DATA + 1)


def test_a_region_may_read_what_the_write_leaves(tmp_path: Path) -> None:
    array = _array(tmp_path / "a.zarr")
    store(to_dask(array)[:4] + 100, array, region=(slice(4, 8), slice(None)))
    np.testing.assert_array_equal(array[4:], DATA[:4] + 100)
    np.testing.assert_array_equal(array[:4], DATA[:4])
    with pytest.raises(
        InPlaceWriteError, match=r"\(1, 0\).*reads \[0:4, 4:8\].*writes \[4:8, 4:8\]"
    ):
        store(to_dask(array)[:4].T, array, region=(slice(None), slice(4, 8)))


def test_other_arrays_and_persisted_values_are_written(tmp_path: Path) -> None:
    array = _array(tmp_path / "a.zarr")
    other = _array(tmp_path / "b.zarr")
    store(to_dask(other)[::-1], array)
    np.testing.assert_array_equal(array[...], DATA[::-1])
    store(to_dask(array)[::-1].persist(), array)  # computed before any write
    np.testing.assert_array_equal(array[...], DATA)


def test_safe_false_skips_the_check(tmp_path: Path) -> None:
    array = _array(tmp_path / "a.zarr")
    with dask.config.set(scheduler="synchronous"):
        store(to_dask(array)[:, :4], array, region=(slice(None), slice(4, 8)), safe=False)
    np.testing.assert_array_equal(array[:, 4:], DATA[:, :4])


def test_from_dask_refuses_to_overwrite_what_it_reads(tmp_path: Path) -> None:
    """`from_dask(to_dask(a) + 1, <a's path>, overwrite=True)` deleted `a` first and wrote
    fill + 1 everywhere: the data was lost."""
    array = _array(tmp_path / "a.zarr")
    with pytest.raises(InPlaceWriteError, match=r"overwriting deletes"):
        from_dask(to_dask(array) + 1, tmp_path / "a.zarr", overwrite=True)
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "a.zarr")[...], DATA)
    group = aiozarr.create_group(tmp_path / "g.zarr")
    member = group.create_array("x", shape=DATA.shape, dtype=DATA.dtype, chunks=(4, 4))
    member[...] = DATA
    with pytest.raises(InPlaceWriteError, match=r"at or under 'x'"):
        from_dask(to_dask(member)[::-1], tmp_path / "g.zarr", name="x", overwrite=True)
    with pytest.raises(InPlaceWriteError):  # the group holding it
        from_dask(to_dask(member) * 2, tmp_path, "g.zarr", overwrite=True)
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "g.zarr", "x")[...], DATA)
    # beside it, or over an array it does not read: written
    out = from_dask(to_dask(member) * 2, tmp_path / "g.zarr", "y", overwrite=True)
    np.testing.assert_array_equal(out[...], DATA * 2)
    out = from_dask(to_dask(member)[::-1], tmp_path / "a.zarr", overwrite=True)
    np.testing.assert_array_equal(out[...], DATA[::-1])


def test_xarray_lazy_arrays_are_followed_to_the_array(tmp_path: Path) -> None:
    """A dataset opened with aiozarr's engine and written back over itself reversed wrote
    `[0..7, 7..0]` (xarray's lazy arrays hid the array from the check)."""
    xr = pytest.importorskip("xarray")
    from aiozarr.xarray import to_zarr

    where = str(tmp_path / "d.zarr")
    to_zarr(xr.Dataset({"v": ("x", np.arange(16.0))}), where, encoding={"v": {"chunks": (4,)}})
    opened = xr.open_dataset(where, engine="aiozarr", chunks={})
    with pytest.raises(InPlaceWriteError, match=r"reads \[12:16\].*/v.*writes \[0:4\]"):
        to_zarr(opened.isel(x=slice(None, None, -1)).chunk(x=4), where, mode="r+")
    # indexed before it was chunked: xarray's lazy key is not followed, all of it is read
    lazy = xr.open_dataset(where, engine="aiozarr").isel(x=slice(None, None, -1)).chunk(x=4)
    with pytest.raises(InPlaceWriteError, match=r"reads \[0:16\]"):
        to_zarr(lazy, where, mode="r+")
    with pytest.raises(InPlaceWriteError):
        store(opened.v.data[::-1], aiozarr.open_array(where, "v", mode="r+"))
    np.testing.assert_array_equal(aiozarr.open_array(where, "v")[...], np.arange(16.0))
    to_zarr(opened * 2, where, mode="r+")  # each block reads what it writes
    np.testing.assert_array_equal(aiozarr.open_array(where, "v")[...], np.arange(16.0) * 2)


def test_xarray_mode_w_refuses_to_replace_what_it_reads(tmp_path: Path) -> None:
    """`to_zarr(opened * 2, same, mode="w")` deleted the group, then its tasks read fill
    values: every value NaN (xarray's own engine does the same)."""
    xr = pytest.importorskip("xarray")
    from aiozarr.xarray import to_zarr

    where = str(tmp_path / "d.zarr")
    to_zarr(xr.Dataset({"v": ("x", np.arange(16.0))}), where, encoding={"v": {"chunks": (4,)}})
    opened = xr.open_dataset(where, engine="aiozarr", chunks={})
    with pytest.raises(InPlaceWriteError, match=r"at or under '/'.*overwriting deletes"):
        to_zarr(opened * 2, where, mode="w")
    np.testing.assert_array_equal(aiozarr.open_array(where, "v")[...], np.arange(16.0))
    to_zarr(opened * 2, str(tmp_path / "e.zarr"), mode="w")
    to_zarr(opened.load() * 2, where, mode="w")  # loaded first: nothing read afterwards
    np.testing.assert_array_equal(aiozarr.open_array(where, "v")[...], np.arange(16.0) * 2)
