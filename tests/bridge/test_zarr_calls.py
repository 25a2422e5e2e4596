"""`aiozarr.zarr.Store` under zarr-python's and xarray's calls: arrays and datasets
written and read through it, its batches coalesced as aiozarr's own are, its reads
retried by aiozarr's request policy, and its read-only flag kept."""

from __future__ import annotations

import multiprocessing
import pickle
import uuid
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import ReadOnlyError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.opening.url import from_url
from aiozarr.zarr import Store
from aiozarr.zarr.pipeline_stores import aiozarr_store_for

DATA = np.arange(400, dtype="int32").reshape(20, 20)


def _s3(emulator: Emulator, **kwargs: object) -> Store:
    url = emulator.s3_url(f"bridge-{uuid.uuid4().hex}")
    return Store(url, storage_options=emulator.storage_options(), **kwargs)  # type: ignore[arg-type]


def _write_sharded(store: Store) -> None:
    arr = zarr.create_array(
        store=store, name="a", shape=DATA.shape, chunks=(5, 5), shards=(10, 10), dtype="int32"
    )
    arr[:] = DATA


# -- zarr-python ---------------------------------------------------------------------------


def test_zarr_writes_and_reads_an_array_on_s3(emulator: Emulator) -> None:
    store = _s3(emulator)
    _write_sharded(store)
    emulator.reset_stats()
    again = zarr.open_array(store=store, path="a", mode="r")
    np.testing.assert_array_equal(again[:], DATA)
    np.testing.assert_array_equal(again[3:7, 12:18], DATA[3:7, 12:18])
    assert emulator.stats()["by_method"]["GET"] > 0  # read from the emulator, not a cache
    # aiozarr's own API reads what zarr-python wrote through the bridge.
    np.testing.assert_array_equal(aiozarr.open_array(store.aiozarr_store, path="a")[:], DATA)


def test_zarr_group_on_a_local_directory(tmp_path: Path) -> None:
    store = Store(tmp_path / "g.zarr")
    group = zarr.open_group(store=store, mode="w", attributes={"title": "bridge"})
    group.create_array("x", shape=(6,), chunks=(4,), dtype="float64")[:] = np.arange(6.0)
    reopened = zarr.open_group(store=Store(str(tmp_path / "g.zarr"), read_only=True), mode="r")
    assert reopened.attrs["title"] == "bridge"
    np.testing.assert_array_equal(reopened["x"][:], np.arange(6.0))
    assert sorted(reopened.array_keys()) == ["x"]


def test_read_only_store_refuses_zarr_writes() -> None:
    name = f"memory://bridge-{uuid.uuid4().hex}"
    _write_sharded(Store(name))
    arr = zarr.open_array(store=Store(name, read_only=True), path="a")
    with pytest.raises(ValueError, match="read-only mode") as refused:
        arr[0, 0] = 1
    assert isinstance(refused.value, ReadOnlyError)  # aiozarr's, naming the key
    assert "'a/c/0/0'" in str(refused.value)
    np.testing.assert_array_equal(zarr.open_array(store=Store(name), path="a")[:], DATA)


def test_a_store_that_cannot_write_is_read_only(emulator: Emulator) -> None:
    store = Store(emulator.http_url("anything"))
    assert store.read_only and store.with_read_only(False).read_only


def test_closing_the_store_finishes_a_zip_archive(tmp_path: Path) -> None:
    # As zarr-python's ZipStore: close() and the end of a with block write the central
    # directory, so the archive is complete for any reader before the process ends.
    closed = Store(tmp_path / "closed.zarr.zip")
    _write_sharded(closed)
    closed.close()
    with Store(tmp_path / "with.zarr.zip") as in_block:
        _write_sharded(in_block)
    for name in ("closed", "with"):
        with zarr.storage.ZipStore(tmp_path / f"{name}.zarr.zip", mode="r") as archive:
            np.testing.assert_array_equal(zarr.open_array(archive, path="a")[:], DATA)
    with pytest.warns(UserWarning, match="Duplicate name"):  # zipfile's, as in zarr
        zarr.open_array(closed, path="a")[0, 0] = -1  # written after close: appended
    closed.close()
    with zarr.storage.ZipStore(tmp_path / "closed.zarr.zip", mode="r") as archive:
        assert zarr.open_array(archive, path="a")[0, 0] == -1


def test_a_zip_url_store_opened_to_read_reads_what_was_written(tmp_path: Path) -> None:
    # zarr's mode "r" asks with_read_only(True): a view of the archive being written,
    # not its unfinished file opened again ("not a zip archive").
    store = Store(tmp_path / "x.zarr.zip")
    _write_sharded(store)
    np.testing.assert_array_equal(zarr.open_array(store, path="a", mode="r")[:], DATA)
    read_only = store.with_read_only(True)
    assert read_only.read_only and read_only == Store(tmp_path / "x.zarr.zip", read_only=True)
    with pytest.raises(ReadOnlyError):
        zarr.open_array(read_only, path="a")[0, 0] = 1
    store.close()
    reopened = Store(tmp_path / "x.zarr.zip", read_only=True)
    assert not reopened.with_read_only(False).read_only  # opened again to write


def test_an_array_path_lists_its_own_keys_only(tmp_path: Path) -> None:
    # zarr-python counts an array's chunks from list_prefix of its path without a "/"
    # and takes every key for its own: a sibling whose name begins with it ("time",
    # "time_bnds") made nchunks_initialized and info_complete raise ValueError ("The
    # first component of time_bnds/c/0 does not start with time"), as they do not on
    # zarr's LocalStore and ObjectStore, which list "time" as the directory "time/".
    store = Store(tmp_path / "g.zarr")
    group = zarr.open_group(store, mode="w")
    for name in ("time", "time_bnds"):
        group.create_array(name, shape=(4,), chunks=(2,), dtype="i4")[:] = 1
    assert group["time"].nchunks_initialized == 2
    assert group["time"].info_complete()._count_chunks_initialized == 2

    async def keys(prefix: str) -> list[str]:
        return sorted([key async for key in store.list_prefix(prefix)])

    assert zarr.core.sync.sync(keys("time")) == ["time/c/0", "time/c/1", "time/zarr.json"]


# -- xarray --------------------------------------------------------------------------------


@pytest.fixture
def dataset():  # type: ignore[no-untyped-def]
    xr = pytest.importorskip("xarray")
    return xr.Dataset(
        {"t": (("x", "y"), np.arange(12.0).reshape(3, 4), {"units": "K"})},
        coords={"x": [10, 20, 30], "y": [1, 2, 3, 4]},
        attrs={"title": "bridge"},
    )


def test_xarray_to_zarr_open_zarr_and_open_dataset(emulator: Emulator, dataset) -> None:  # type: ignore[no-untyped-def]
    import xarray as xr

    store = _s3(emulator)
    dataset.to_zarr(store, zarr_format=3)
    opened = xr.open_zarr(store)
    xr.testing.assert_identical(opened.load(), dataset)
    with xr.open_dataset(store, engine="zarr") as again:
        xr.testing.assert_identical(again.load(), dataset)


def test_xarray_appends_along_a_dimension(tmp_path: Path, dataset) -> None:  # type: ignore[no-untyped-def]
    import xarray as xr

    store = Store(tmp_path / "ds.zarr")
    dataset.to_zarr(store, zarr_format=3)
    more = dataset.assign_coords(x=[40, 50, 60])
    more.to_zarr(store, append_dim="x")
    opened = xr.open_zarr(store).load()
    assert list(opened["x"].values) == [10, 20, 30, 40, 50, 60]
    np.testing.assert_array_equal(opened["t"].values[3:], dataset["t"].values)


# -- aiozarr's batches and request policy --------------------------------------------------


async def test_ranges_of_one_key_are_one_request(emulator: Emulator) -> None:
    counting = CountingStore(
        from_url(
            emulator.s3_url(f"bridge-{uuid.uuid4().hex}"),
            storage_options=emulator.storage_options(),
        )
    )
    store = Store(counting)
    blob = bytes(range(256)) * 64  # 16 KiB
    await counting.set("k", blob)
    counting.reset()
    emulator.reset_stats()
    offsets = range(0, 8000, 800)  # ten ranges, 700 bytes apart: under the coalescing gap
    got = await store.get_partial_values(
        default_buffer_prototype(), [("k", RangeByteRequest(o, o + 100)) for o in offsets]
    )
    assert [g.to_bytes() for g in got if g is not None] == [blob[o : o + 100] for o in offsets]
    assert counting.counts["get"] == 1
    assert emulator.stats()["by_kind"] == {"get_range": 1}
    assert [len(batch) for batch in counting.batches] == [10]


async def test_one_batch_for_many_keys_and_kinds_of_range() -> None:
    counting = CountingStore(MemoryStore())
    store = Store(counting)
    for key in ("a", "b", "c"):
        await counting.set(key, key.encode() * 10)
    counting.reset()
    got = await store.get_partial_values(
        default_buffer_prototype(),
        [
            ("a", RangeByteRequest(2, 5)),
            ("b", OffsetByteRequest(8)),
            ("c", SuffixByteRequest(3)),
            ("missing", None),
            ("a", None),
        ],
    )
    assert [None if g is None else g.to_bytes() for g in got] == [
        b"aaa",
        b"bb",
        b"ccc",
        None,
        b"a" * 10,
    ]
    assert len(counting.batches) == 1


def test_zarr_reads_are_retried_by_aiozarr(emulator: Emulator) -> None:
    store = _s3(emulator)
    _write_sharded(store)
    emulator.reset_stats()
    emulator.inject("status", count=2, status=503, methods=["GET"])
    np.testing.assert_array_equal(zarr.open_array(store=store, path="a", mode="r")[:], DATA)
    assert emulator.stats()["by_status"]["503"] == 2
    assert store.aiozarr_store.stats()["retries"] >= 2


# -- identity ------------------------------------------------------------------------------


def test_pickled_url_store_opens_its_url_again(emulator: Emulator) -> None:
    store = _s3(emulator, read_only=False)
    _write_sharded(store)
    copy = pickle.loads(pickle.dumps(store))
    assert copy == store and copy.aiozarr_store is not store.aiozarr_store
    np.testing.assert_array_equal(zarr.open_array(store=copy, path="a")[:], DATA)
    assert copy != store.with_read_only(True)


def _write_through_copy(store: Store) -> tuple[list[int], str]:
    arr = zarr.open_array(store=store, path="m", mode="r+")
    values = arr[:].tolist()
    try:
        arr[:] = 9
    except ReadOnlyError as error:
        return values, str(error)
    return values, "written"


def test_a_memory_url_store_pickled_to_another_process_reads_and_refuses_writes() -> None:
    store = Store(f"memory://bridge-{uuid.uuid4().hex}", read_only=False)
    zarr.create_array(store, name="m", shape=(3,), dtype="i4", chunks=(3,))[:] = [7, 8, 9]
    assert pickle.loads(pickle.dumps(store)).aiozarr_store is store.aiozarr_store  # here
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        values, outcome = pool.apply(_write_through_copy, (store,))
    assert values == [7, 8, 9]  # a copy of its values, not a new empty store
    assert "memory stores live in one process" in outcome


def test_the_codec_pipeline_reads_through_the_wrapped_store() -> None:
    inner = MemoryStore()
    assert aiozarr_store_for(Store(inner)) is inner


# -- zarr-python stores --------------------------------------------------------------------


def test_a_zarr_store_through_the_store_the_codec_pipeline_uses(tmp_path: Path) -> None:
    # zarr's LocalStore: aiozarr's own store over the directory; another zarr store (a
    # wrapper, which may map keys its own way): its own API. Either is what the codec
    # pipeline reads the zarr store through, so they share budgets and statistics.
    local = zarr.storage.LocalStore(tmp_path / "z.zarr")
    wrapped = zarr.storage.LoggingStore(zarr.storage.MemoryStore())
    for zarr_store in (local, wrapped):
        store = Store(zarr_store)
        assert store.aiozarr_store is aiozarr_store_for(zarr_store)
        _write_sharded(store)
        np.testing.assert_array_equal(zarr.open_array(zarr_store, path="a")[:], DATA)
        np.testing.assert_array_equal(zarr.open_array(store, path="a", mode="r")[:], DATA)
        assert Store(store).aiozarr_store is store.aiozarr_store
    assert isinstance(Store(local).aiozarr_store, aiozarr.storage.LocalStore)
    assert wrapped.counter["set"] > 0  # written through the wrapper


def test_a_zarr_store_read_only_stays_read_only(tmp_path: Path) -> None:
    zarr.create_array(store=tmp_path, shape=(4,), dtype="int8")
    read_only = zarr.storage.LocalStore(tmp_path, read_only=True)
    writable = zarr.storage.LocalStore(tmp_path)
    for store in (Store(read_only), Store(writable, read_only=True)):
        assert store.read_only and store.aiozarr_store.read_only
        with pytest.raises(ReadOnlyError):
            zarr.open_array(store)[:] = 1
    assert not writable.read_only  # the zarr store itself is left as it was


def test_what_it_takes() -> None:
    with pytest.raises(TypeError, match="a URL, a path, an aiozarr store or a zarr-python"):
        Store(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="storage_options"):
        Store(MemoryStore(), storage_options={"region": "x"})
    with pytest.raises(TypeError, match="storage_options"):
        Store(zarr.storage.MemoryStore(), storage_options={"region": "x"})
    with pytest.raises(TypeError, match="Unexpected byte_range"):
        zarr.core.sync.sync(
            Store(MemoryStore()).get("k", default_buffer_prototype(), (0, 2))  # type: ignore[arg-type]
        )
