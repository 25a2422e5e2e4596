"""aiozarr arrays in dask: from_array, to_dask, store/from_dask and pickling."""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import aiozarr  # noqa: E402
from aiozarr.dask import OverlappingWriteError, from_dask, store, to_dask  # noqa: E402
from aiozarr.emulator import Emulator  # noqa: E402
from aiozarr.errors import SelectionError, ValueShapeError  # noqa: E402
from aiozarr.storage.backends.counting import CountingStore  # noqa: E402
from aiozarr.storage.opening.url import from_url  # noqa: E402

DATA = np.arange(120 * 80, dtype="f8").reshape(120, 80) / 7


def sharded(where: Path | str, **options: object) -> aiozarr.Array:
    return aiozarr.create_array(
        where, shape=DATA.shape, dtype="f8", chunks=(10, 20), shards=(40, 40), **options
    )


def test_from_array_and_to_dask_sum(tmp_path: Path) -> None:
    array = sharded(tmp_path / "a.zarr")
    array[...] = DATA
    blocks = to_dask(array)
    assert blocks.chunks == ((40, 40, 40), (40, 40))  # one block per shard
    assert blocks.sum().compute() == pytest.approx(DATA.sum())
    plain = da.from_array(array, chunks=(30, 80))
    assert plain.sum().compute() == pytest.approx(DATA.sum())
    np.testing.assert_array_equal(to_dask(array.async_array)[5:50, 7].compute(), DATA[5:50, 7])
    unsharded = aiozarr.create_array(tmp_path / "u.zarr", shape=(50,), dtype="i4", chunks=(8,))
    assert to_dask(unsharded).chunks == ((8, 8, 8, 8, 8, 8, 2),)
    assert to_dask(array).name == to_dask(aiozarr.open_array(tmp_path / "a.zarr")).name


def test_misaligned_writes_are_refused(tmp_path: Path) -> None:
    target = sharded(tmp_path / "b.zarr")
    with pytest.raises(OverlappingWriteError, match=r"axis 0.*edge at 20.*shard of 40"):
        store(da.from_array(DATA, chunks=(20, 40)), target)
    assert not target[...].any()  # refused before any task ran


def test_aligned_and_explicitly_unsafe_writes(tmp_path: Path) -> None:
    target = sharded(tmp_path / "c.zarr")
    store(da.from_array(DATA, chunks=(80, 40)), target)  # the last block ends at the edge
    np.testing.assert_array_equal(target[...], DATA)
    loose = sharded(tmp_path / "d.zarr")
    # one thread: the unsafe layout cannot race, so the result is exact
    import dask

    with dask.config.set(scheduler="synchronous"):
        store(da.from_array(DATA, chunks=(25, 25)), loose, safe=False)
    np.testing.assert_array_equal(loose[...], DATA)
    region = sharded(tmp_path / "e.zarr")
    store(da.from_array(DATA[40:80], chunks=(40, 40)), region, region=(slice(40, 80), slice(None)))
    np.testing.assert_array_equal(region[40:80], DATA[40:80])
    with pytest.raises(OverlappingWriteError, match=r"starts at 30 .* \[30:70, 0:80\]"):
        store(da.from_array(DATA[30:70]), region, region=(slice(30, 70), slice(None)))
    # ending inside a shard (40:80) shares it with the next region's writer, as starting does
    with pytest.raises(
        OverlappingWriteError, match=r"ends at 70 on axis 0, inside the shard 40:80"
    ):
        store(da.from_array(DATA[40:70]), region, region=(slice(40, 70), slice(None)))
    store(da.from_array(DATA[80:]), region, region=(slice(80, 120), slice(None)))  # the end
    # as xarray's appends: a region starting inside a shard, its first block that
    # shard's only writer here; the edges between blocks still on shard boundaries
    inside = (slice(30, 70), slice(None))
    store(
        da.from_array(DATA[30:70] + 1, chunks=((10, 30), 80)),
        region,
        region=inside,
        partial_edges=True,
    )
    np.testing.assert_array_equal(region[30:70], DATA[30:70] + 1)
    assert not region[:30].any()
    with pytest.raises(OverlappingWriteError, match=r"edge at 50"):
        store(
            da.from_array(DATA[30:70], chunks=(20, 80)), region, region=inside, partial_edges=True
        )


def test_from_dask(tmp_path: Path) -> None:
    out = from_dask(da.from_array(DATA, chunks=(30, 40)), tmp_path / "f.zarr")
    assert out.chunks == (30, 40)
    np.testing.assert_array_equal(out[...], DATA)
    # the refusal names where the user writes, not the layout planned in memory
    with pytest.raises(OverlappingWriteError, match=r"g\.zarr") as refused:
        from_dask(da.from_array(DATA, chunks=(30, 40)), tmp_path / "g.zarr", chunks=(20, 40))
    assert "MemoryStore" not in str(refused.value)


def test_from_dask_without_compute_returns_the_write(tmp_path: Path) -> None:
    """It returned the array and dropped the Delayed: nothing was ever written."""
    written = from_dask(da.from_array(DATA, chunks=(30, 40)), tmp_path / "d.zarr", compute=False)
    out = aiozarr.open_array(tmp_path / "d.zarr")
    assert not np.array_equal(out[...], DATA)
    written.compute()
    np.testing.assert_array_equal(out[...], DATA)


def test_from_dask_gives_irregular_blocks_one_chunk_each() -> None:
    """The first block's length for every chunk made a layout `store` refused."""
    source = da.from_array(DATA, chunks=((30, 60, 30), 40))
    out = from_dask(source, "memory://from-dask-irregular")
    assert out.write_chunk_sizes[0] == (30, 60, 30)
    np.testing.assert_array_equal(out[...], DATA)


def test_from_dask_gives_empty_blocks_no_chunk(tmp_path: Path) -> None:
    """A masked array's blocks, once measured, may be empty: ((4, 0, 4, 0),) asked for a
    chunk of length 0 and `from_dask` raised a `MetadataError` about chunk edges."""
    values = da.arange(16, chunks=4)
    out = from_dask(values[values % 8 < 4].compute_chunk_sizes(), tmp_path / "a.zarr")
    assert out.chunks == (4,)
    np.testing.assert_array_equal(out[...], [0, 1, 2, 3, 8, 9, 10, 11])
    out = from_dask(values[values < 6].compute_chunk_sizes(), tmp_path / "b.zarr")
    assert out.chunks == (4,)
    np.testing.assert_array_equal(out[...], np.arange(6))
    out = from_dask(da.zeros((0, 4), chunks=2), tmp_path / "c.zarr")
    assert out.shape == (0, 4)


def test_pickles_small_without_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "ENV-SECRET-never-in-a-pickle"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENV-KEY-ID")
    with Emulator(tmp_path / "bucket").running_in_thread() as emu:
        array = sharded(emu.s3_url("p.zarr"), storage_options=emu.storage_options())
        array[...] = DATA
        payload = pickle.dumps(array)
        assert len(payload) < 4096
        assert secret.encode() not in payload and b"ENV-KEY-ID" not in payload
        task = pickle.dumps(to_dask(array).sum())
        assert secret.encode() not in task
        back = pickle.loads(payload)
        np.testing.assert_array_equal(back[:3, :3], DATA[:3, :3])
        assert len(pickle.dumps(array.async_array)) < 4096


def test_top_level_dask_functions_load_dask_lazily() -> None:
    code = (
        "import sys, aiozarr\n"
        "assert 'dask' not in sys.modules, 'import aiozarr imported dask'\n"
        "import aiozarr.dask\n"
        "assert aiozarr.to_dask is aiozarr.dask.to_dask\n"
        "assert aiozarr.from_dask is aiozarr.dask.from_dask\n"
        "assert 'to_dask' in dir(aiozarr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lazy = "import sys, aiozarr\naiozarr.to_dask\nassert 'dask' in sys.modules\n"
    done = subprocess.run([sys.executable, "-c", lazy], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _referenced(value: int) -> dict[str, object]:
    """A reference file (kerchunk's form, inline data) of one 4-element array `x`."""
    meta = {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i4", "compressor": None}
    meta |= {"fill_value": 0, "filters": None, "order": "C"}
    chunk = base64.b64encode(np.full(4, value, "<i4").tobytes()).decode()
    refs = {
        ".zgroup": '{"zarr_format": 2}',
        "x/.zarray": json.dumps(meta),
        "x/0": f"base64:{chunk}",
    }
    return {"version": 1, "refs": refs}


def test_arrays_of_stores_that_cannot_say_where_they_are_get_their_own_names() -> None:
    """Two reference stores over different files print alike: dask merged their blocks."""
    one = to_dask(aiozarr.open_array(_referenced(1), "x"))
    two = to_dask(aiozarr.open_array(_referenced(2), "x"))
    assert one.name != two.name
    np.testing.assert_array_equal((one + two).compute(), [3, 3, 3, 3])


def test_a_refused_layout_leaves_the_array_it_would_overwrite(tmp_path: Path) -> None:
    old = aiozarr.create_array(tmp_path / "a.zarr", shape=(10,), dtype="i8", chunks=(5,))
    old[...] = np.arange(10)
    with pytest.raises(OverlappingWriteError):
        from_dask(da.arange(10, chunks=3), tmp_path / "a.zarr", chunks=(5,), overwrite=True)
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "a.zarr")[...], np.arange(10))


@pytest.mark.parametrize(
    "region",
    [(2,), (slice(0, 4), slice(0, 1)), (slice(8, 0, -1),), (slice(0, 8, 2),)],
    ids=["int", "too many", "negative step", "step 2"],
)
def test_a_region_that_is_not_one_plain_slice_per_axis_is_refused(
    tmp_path: Path, region: tuple[object, ...]
) -> None:
    target = aiozarr.create_array(tmp_path / "r.zarr", shape=(8,), dtype="i8", chunks=(4,))
    with pytest.raises(SelectionError, match="region"):
        store(da.zeros(4, chunks=4, dtype="i8"), target, region=region)


def test_a_region_with_negative_bounds_is_written(tmp_path: Path) -> None:
    target = aiozarr.create_array(tmp_path / "r.zarr", shape=(8,), dtype="i8", chunks=(4,))
    store(da.ones(4, chunks=4, dtype="i8"), target, region=(slice(-4, None),))
    np.testing.assert_array_equal(target[...], [0, 0, 0, 0, 1, 1, 1, 1])


def test_a_shape_mismatch_is_a_value_shape_error(tmp_path: Path) -> None:
    target = sharded(tmp_path / "a.zarr")
    with pytest.raises(ValueShapeError, match=r"shape \(120, 79\).*it has shape \(120, 80\)"):
        store(da.zeros((120, 79), chunks=40), target)
    region = (slice(0, 40), slice(0, 40))
    with pytest.raises(ValueError, match=r"its region has shape \(40, 40\)"):
        store(da.zeros((40, 80), chunks=40), target, region=region)


def test_unknown_chunk_sizes_are_named(tmp_path: Path) -> None:
    """A masked dask array was refused for a shape of `(nan,)` against the target's, and
    by `from_dask` as a `MetadataError` about the shape."""
    values = da.arange(16, chunks=4)
    masked = values[values > 3]
    target = aiozarr.create_array(tmp_path / "a.zarr", shape=(12,), dtype="i8", chunks=(4,))
    with pytest.raises(ValueShapeError, match=r"unknown chunk sizes.*compute_chunk_sizes"):
        store(masked, target)
    with pytest.raises(ValueShapeError, match=r"unknown chunk sizes.*b\.zarr.*compute_chunk"):
        from_dask(masked, tmp_path / "b.zarr")
    assert not (tmp_path / "b.zarr").exists()
    store(masked.compute_chunk_sizes().rechunk(4), target)
    np.testing.assert_array_equal(target[...], np.arange(4, 16))


def test_dasks_regions_spelling_names_region(tmp_path: Path) -> None:
    """`regions=` (dask's keyword) was refused as a shape mismatch with the whole array."""
    target = aiozarr.create_array(tmp_path / "r.zarr", shape=(8,), dtype="i8", chunks=(4,))
    with pytest.raises(TypeError, match=r"region=.*not dask's regions="):
        store(da.ones(4, chunks=4, dtype="i8"), target, regions=(slice(4, 8),))


def test_a_selection_of_a_shard_reads_its_inner_chunks_only(tmp_path: Path) -> None:
    """`to_dask(a)[5, 7]` read the whole shard (dask did not fuse the selection into a
    `getter_nofancy` block read); a whole block is still one request."""
    sharded(tmp_path / "a.zarr", compressors=None)[...] = DATA
    counted = CountingStore(from_url(str(tmp_path)))
    blocks = to_dask(aiozarr.open_array(counted, "a.zarr"))
    index_bytes = 4 * 4 * 16 + 4  # 4 x 2 inner chunks of 10 x 20, an offset and a length each
    with dask.config.set(scheduler="synchronous"):
        assert blocks[5, 7].compute() == DATA[5, 7]
        assert counted.bytes_read <= index_bytes + 10 * 20 * 8  # the index and one chunk
        counted.reset()
        np.testing.assert_array_equal(blocks[::7, [33, 1, 77]].compute(), DATA[::7, [33, 1, 77]])
        np.testing.assert_array_equal(blocks[100:2:-9, -3].compute(), DATA[100:2:-9, -3])
        counted.reset()
        np.testing.assert_array_equal(blocks.compute(), DATA)
    assert counted.counts["get"] == 6  # one per shard


def test_what_is_not_an_array_is_named() -> None:
    """A group or a numpy array given for the aiozarr array, or numpy values for the dask
    array, failed on a missing attribute deep inside (`AttributeError: 'Group' object has
    no attribute 'rectilinear_grid'`)."""
    group = aiozarr.create_group("memory://dask-not-an-array")
    array = group.create_array("a", shape=(4,), dtype="i8", chunks=(2,))
    with pytest.raises(TypeError, match="expected an aiozarr array, got Group"):
        to_dask(group)
    with pytest.raises(TypeError, match="expected an aiozarr array, got ndarray"):
        store(da.ones(4, chunks=2, dtype="i8"), np.zeros(4))
    with pytest.raises(TypeError, match=r"expected a dask array.*got ndarray.*from_array"):
        store(np.ones(4, dtype="i8"), array)
    with pytest.raises(TypeError, match="expected a dask array"):
        from_dask(np.ones(4), "memory://dask-not-a-dask-array")
