"""The xarray backend (`engine="aiozarr"`) and `aiozarr.xarray.to_zarr`, on the emulator."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

from tests.reliability.proxies import Proxy  # noqa: E402

import aiozarr  # noqa: E402
from aiozarr.emulator import Emulator  # noqa: E402
from aiozarr.errors import MetadataError, NodeExistsError  # noqa: E402
from aiozarr.storage.backends.counting import CountingStore  # noqa: E402
from aiozarr.storage.opening.url import from_url  # noqa: E402
from aiozarr.testing.round_trips import RoundTripStore  # noqa: E402
from aiozarr.xarray import AiozarrBackendEntrypoint, to_zarr  # noqa: E402

ENGINE = AiozarrBackendEntrypoint

pytestmark = [
    pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning"),
    # xarray's warning when a group opened with consolidated=None has no consolidated
    # metadata (test_xarray_round_trips.py asserts it)
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated:RuntimeWarning"),
]


def sample(n_time: int = 6) -> xr.Dataset:
    """CF times, scale/offset packing, a _FillValue with NaNs, a non-index coordinate."""
    rng = np.random.default_rng(0)
    temp = rng.integers(0, 60, (n_time, 4, 5)) * 0.5  # exact after int16 packing
    temp[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), temp, {"units": "degC", "long_name": "temperature"}),
            "count": (("time", "x"), rng.integers(0, 100, (n_time, 5)).astype("i4")),
        },
        coords={
            "time": pd.date_range("2020-01-01", periods=n_time, freq="D"),
            "y": np.linspace(-1, 1, 4),
            "x": np.arange(5.0),
            "lat": (("y", "x"), rng.random((4, 5))),
        },
        attrs={"title": "sample", "history": "made in a test"},
    )
    ds.temp.encoding = {"dtype": "int16", "scale_factor": 0.5, "_FillValue": -9999}
    ds.time.encoding = {"units": "days since 2000-01-01"}
    return ds


def write_with_zarr_python(ds: xr.Dataset, where: Path, **kwargs: object) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(where, **kwargs)


def fresh(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}.zarr"


# -- reading ----------------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_opens_what_zarr_python_wrote_identically(
    emulator: Emulator, local_path: Callable[[str], Path], zarr_format: int, consolidated: bool
) -> None:
    path = fresh("zp")
    write_with_zarr_python(
        sample(), local_path(path), zarr_format=zarr_format, consolidated=consolidated
    )
    ours = xr.open_dataset(
        emulator.s3_url(path), engine=ENGINE, storage_options=emulator.storage_options()
    )
    theirs = xr.open_zarr(local_path(path), consolidated=consolidated)
    xr.testing.assert_identical(ours, theirs)
    assert ours.time.dtype == np.dtype("datetime64[ns]")
    assert np.isnan(ours.temp.values[0, 0, 0])


def test_engine_by_name(emulator: Emulator, local_path: Callable[[str], Path]) -> None:
    """Passes once the `xarray.backends` entry point is installed (`pip install -e .`)."""
    path = fresh("named")
    write_with_zarr_python(sample(), local_path(path), zarr_format=3)
    ds = xr.open_dataset(
        emulator.s3_url(path), engine="aiozarr", storage_options=emulator.storage_options()
    )
    xr.testing.assert_identical(ds, xr.open_zarr(local_path(path)))


def wide_dataset() -> xr.Dataset:
    """10 data variables and 4 dimension coordinates; each variable is one chunk."""
    coords = {
        "time": pd.date_range("2021-01-01", periods=3),
        "level": np.arange(2.0),
        "y": np.arange(4.0),
        "x": np.arange(5.0),
    }
    data = {
        f"v{i}": (("time", "level", "y", "x"), np.full((3, 2, 4, 5), float(i))) for i in range(10)
    }
    return xr.Dataset(data, coords=coords)


@pytest.mark.parametrize(("consolidated", "most"), [(True, 3), (False, 4)])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_open_round_trips(
    emulator: Emulator,
    local_path: Callable[[str], Path],
    emulator_store: Callable[[str], Any],
    consolidated: bool,
    most: int,
    zarr_format: int,
) -> None:
    path = fresh("wide")
    write_with_zarr_python(
        wide_dataset(),
        local_path(path),
        zarr_format=zarr_format,
        consolidated=consolidated,
    )
    store = emulator_store(path)
    ds = xr.open_dataset(store, engine=ENGINE)
    assert store.depth <= most, store.requests
    if consolidated:  # the group document holds every member's metadata
        assert store.depth <= 2
    read = {key for op, key, _ in store.requests if op == "get"}
    # only metadata and the 4 index coordinates' chunks: no data variable is read
    metadata = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")
    assert not [k for k in read if k.startswith("v") and not k.endswith(metadata)]
    assert any(k.startswith("time/") and not k.endswith(metadata) for k in read)
    store.reset()
    assert float(ds.v3.mean()) == 3.0
    assert store.depth == 1


async def test_load_async_of_8_variables_is_one_batch(
    emulator: Emulator, local_path: Callable[[str], Path]
) -> None:
    path = fresh("async")
    write_with_zarr_python(wide_dataset(), local_path(path), zarr_format=3)
    with Proxy(emulator.endpoint).running() as proxy:
        options = {**emulator.storage_options(), "endpoint": proxy.endpoint}
        store = RoundTripStore(from_url(emulator.s3_url(path), storage_options=options))
        ds = xr.open_dataset(store, engine=ENGINE)
        names = [f"v{i}" for i in range(8)]
        store.reset()
        emulator.reset_stats()
        # The 8 reads are held until all 8 have been sent: one batch, however slowly
        # the machine runs (a read sent after another's answer would never be sent).
        proxy.hold(8)
        loaded = await ds[names].load_async()  # inside the test's running event loop
    assert store.depth == 1
    assert store.counts["get"] == 8
    assert emulator.stats()["peak_inflight"] <= 8
    for i, name in enumerate(names):
        np.testing.assert_array_equal(loaded[name].values, np.full((3, 2, 4, 5), float(i)))


async def test_indexing_sync_and_async(
    emulator: Emulator, local_path: Callable[[str], Path]
) -> None:
    path = fresh("index")
    expected = sample()
    write_with_zarr_python(expected, local_path(path), zarr_format=3)
    ds = xr.open_dataset(
        emulator.s3_url(path), engine=ENGINE, storage_options=emulator.storage_options()
    )
    ref = xr.open_zarr(local_path(path)).load()
    selections = [
        {"time": 2, "x": slice(1, 4)},  # basic
        {"time": [0, 3, 5], "y": [2, 0]},  # outer, unsorted
        {"time": xr.DataArray([0, 1, 4], dims="p"), "x": xr.DataArray([4, 2, 0], dims="p")},
    ]
    for sel in selections:
        xr.testing.assert_identical(ds.temp.isel(sel).load(), ref.temp.isel(sel))
        got = await ds.temp.isel(sel).load_async()
        xr.testing.assert_identical(got, ref.temp.isel(sel))


@pytest.mark.parametrize("load", ["sync", "async"])
async def test_points_picked_by_vectorized_indexing_read_only_their_chunks(
    tmp_path: Path, load: str
) -> None:
    """Points of a 2-d variable were read as their outer bounding selection: here 3 x 3
    chunks for the 4 holding the points (10**8 values for 10**4 points of a large one)."""
    values = np.arange(100 * 100, dtype="f8").reshape(100, 100)
    path = tmp_path / "p.zarr"
    write_with_zarr_python(
        xr.Dataset({"v": (("y", "x"), values)}), path, encoding={"v": {"chunks": (10, 10)}}
    )
    store = CountingStore(from_url(str(path)))
    ours = xr.open_dataset(store, engine=ENGINE).v
    ys, xs = np.array([[5, 95], [-1, 44]]), np.array([[3, 3], [99, 48]])
    sel = {"y": xr.DataArray(ys, dims=("a", "b")), "x": xr.DataArray(xs, dims=("a", "b"))}
    store.reset()
    got = ours.isel(sel).load() if load == "sync" else await ours.isel(sel).load_async()
    assert store.counts["get"] == 4  # chunks (0, 0), (9, 0), (9, 9) and (4, 4)
    np.testing.assert_array_equal(got.values, values[ys, xs])
    xr.testing.assert_identical(got, xr.open_dataset(path, engine="zarr").v.isel(sel).load())


def test_datatree(emulator: Emulator, local_path: Callable[[str], Path]) -> None:
    path = fresh("tree")
    tree = xr.DataTree.from_dict(
        {"/": xr.Dataset(attrs={"root": 1}), "/a": sample(), "/b": wide_dataset()}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(local_path(path), zarr_format=3, consolidated=False)
    ours = xr.open_datatree(
        emulator.s3_url(path), engine=ENGINE, storage_options=emulator.storage_options()
    )
    theirs = xr.open_datatree(local_path(path), engine="zarr", consolidated=False)
    xr.testing.assert_identical(ours, theirs)
    one = xr.open_dataset(
        emulator.s3_url(path),
        engine=ENGINE,
        group="b",
        storage_options=emulator.storage_options(),
    )
    xr.testing.assert_identical(one, theirs["b"].to_dataset())


# -- writing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_to_zarr_reads_back_in_zarr_python(
    emulator: Emulator, local_path: Callable[[str], Path], zarr_format: int
) -> None:
    path = fresh("ours")
    ds = sample()
    to_zarr(
        ds,
        emulator.s3_url(path),
        zarr_format=zarr_format,
        storage_options=emulator.storage_options(),
    )
    theirs = xr.open_zarr(local_path(path))
    xr.testing.assert_identical(theirs, ds)
    ours = xr.open_dataset(
        emulator.s3_url(path), engine=ENGINE, storage_options=emulator.storage_options()
    )
    xr.testing.assert_identical(ours, ds)
    # the packed representation is xarray's: int16 with scale_factor, _FillValue
    raw = aiozarr.open_array(local_path(path), "temp", mode="r")
    assert raw.dtype == np.dtype("int16")
    if zarr_format == 3:
        assert raw.metadata.dimension_names == ("time", "y", "x")
    else:
        assert raw.attrs["_ARRAY_DIMENSIONS"] == ["time", "y", "x"]


def test_to_zarr_encodings_and_modes(tmp_path: Path) -> None:
    ds = sample()
    encoding = {
        "count": {
            "chunks": (2, 5),
            "shards": (4, 5),
            "compressors": [{"name": "gzip", "configuration": {"level": 1}}],
        },
        "x": {"fill_value": -1.0},
    }
    to_zarr(ds, tmp_path / "enc.zarr", encoding=encoding)
    count = aiozarr.open_array(tmp_path / "enc.zarr", "count", mode="r")
    assert (count.chunks, count.shards) == ((2, 5), (4, 5))
    assert "gzip" in str(count.metadata.codecs)
    assert aiozarr.open_array(tmp_path / "enc.zarr", "x", mode="r").fill_value == -1.0
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "enc.zarr"), ds)
    with pytest.raises(NodeExistsError):
        to_zarr(ds, tmp_path / "enc.zarr")  # mode "w-" by default
    to_zarr(ds.isel(time=slice(0, 2)), tmp_path / "enc.zarr", mode="w")
    assert xr.open_zarr(tmp_path / "enc.zarr").sizes["time"] == 2
    with pytest.raises(ValueError, match=r"'count'.*unknown encoding"):
        to_zarr(ds, tmp_path / "bad.zarr", encoding={"count": {"chunk": 3}})


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_append_and_region(tmp_path: Path, zarr_format: int) -> None:
    full = sample(n_time=6)
    where = tmp_path / "grow.zarr"
    to_zarr(full.isel(time=slice(0, 4)), where, zarr_format=zarr_format)
    to_zarr(full.isel(time=slice(4, 6)), where, append_dim="time")
    xr.testing.assert_identical(xr.open_zarr(where), full)
    # a region write of new values, for the variables along time
    changed = full.copy(deep=True)
    changed["temp"][1:3] = 7.5
    changed["count"][1:3] = 42
    part = changed.isel(time=slice(1, 3)).drop_vars(["y", "x", "lat"])
    to_zarr(part, where, region={"time": slice(1, 3)})
    xr.testing.assert_identical(xr.open_zarr(where), changed)
    with pytest.raises(ValueError, match=r"'lat'"):
        to_zarr(changed.isel(time=slice(1, 3)), where, region={"time": slice(1, 3)})


def test_xarray_writes_aiozarr_reads_and_back(tmp_path: Path) -> None:
    ds = sample()
    write_with_zarr_python(ds, tmp_path / "a.zarr", zarr_format=3)
    opened = xr.open_dataset(tmp_path / "a.zarr", engine=ENGINE)
    to_zarr(opened, tmp_path / "b.zarr")  # encodings read back by aiozarr are reused
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "b.zarr"), ds)


# -- bad input --------------------------------------------------------------------------------


def test_missing_dimension_names(tmp_path: Path) -> None:
    group = aiozarr.create_group(tmp_path / "nodims.zarr")
    group.create_array("nameless", shape=(3,), dtype="f4")
    with pytest.raises(MetadataError, match=r"'nameless'.*dimension_names"):
        xr.open_dataset(tmp_path / "nodims.zarr", engine=ENGINE)
    v2 = aiozarr.create_group(tmp_path / "nodims2.zarr", zarr_format=2)
    v2.create_array("bare", shape=(3,), dtype="f4")
    with pytest.raises(MetadataError, match=r"'bare'.*_ARRAY_DIMENSIONS"):
        xr.open_dataset(tmp_path / "nodims2.zarr", engine=ENGINE)


def test_conflicting_dimension_sizes(tmp_path: Path) -> None:
    group = aiozarr.create_group(tmp_path / "sizes.zarr")
    group.create_array("a", shape=(3,), dtype="f4", dimension_names=["x"])
    group.create_array("b", shape=(4,), dtype="f4", dimension_names=["x"])
    with pytest.raises(MetadataError, match=r"'b'.*'x' of size 4.*'a'"):
        xr.open_dataset(tmp_path / "sizes.zarr", engine=ENGINE)


def test_unknown_option(tmp_path: Path) -> None:
    to_zarr(sample(), tmp_path / "ok.zarr")
    with pytest.raises(TypeError, match=r"unknown option.*'chunk_store'"):
        xr.open_dataset(tmp_path / "ok.zarr", engine=ENGINE, chunk_store={})


def test_dask_chunks_follow_shards(tmp_path: Path) -> None:
    pytest.importorskip("dask")
    to_zarr(
        sample(), tmp_path / "s.zarr", encoding={"temp": {"chunks": (1, 4, 5), "shards": (3, 4, 5)}}
    )
    ds = xr.open_dataset(tmp_path / "s.zarr", engine=ENGINE, chunks={})
    assert ds.temp.chunks == ((3, 3), (4,), (5,))
    xr.testing.assert_identical(ds.load(), sample())


# -- strings ----------------------------------------------------------------------------------


def string_sample() -> xr.Dataset:
    """String data variables, fixed-length (numpy `U`) and variable-length (object), with
    non-ASCII, empty and varying lengths, and a string index."""
    notes = np.array(["a long free-text note, ünïcode", "", "x", "多字节"], dtype=object)
    return xr.Dataset(
        {
            "station_name": ("station", np.array(["Zürich", "", "São Paulo", "北京"])),
            "note": ("station", notes),
            "elevation": ("station", np.array([408.0, 3.0, 760.0, 44.0])),
        },
        coords={"station": np.array(["ZRH", "X", "GRU", "PEK"])},
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_string_variables_round_trip(tmp_path: Path, zarr_format: int) -> None:
    ds = string_sample()
    # aiozarr writes, xarray + zarr-python and aiozarr read
    to_zarr(ds, tmp_path / "ours.zarr", zarr_format=zarr_format)
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "ours.zarr").load(), ds)
    ours = xr.open_dataset(tmp_path / "ours.zarr", engine=ENGINE)
    xr.testing.assert_identical(ours, ds)
    assert ours.station_name.values.tolist() == ["Zürich", "", "São Paulo", "北京"]
    assert ours.note.values.tolist() == ds.note.values.tolist()
    # v3 strings keep numpy's StringDType, as engine="zarr" reports them (v2: object)
    note_dtype = xr.open_zarr(tmp_path / "ours.zarr").note.dtype if zarr_format == 3 else object
    assert (ours.station_name.dtype, ours.note.dtype) == (np.dtype("U9"), note_dtype)
    # xarray + zarr-python writes, aiozarr reads what xarray's engine reads
    write_with_zarr_python(ds, tmp_path / "theirs.zarr", zarr_format=zarr_format)
    xr.testing.assert_identical(
        xr.open_dataset(tmp_path / "theirs.zarr", engine=ENGINE),
        xr.open_zarr(tmp_path / "theirs.zarr").load(),
    )


def _wide_dataset_counted(
    emulator: Emulator, local_path: Callable[[str], Path], name: str
) -> CountingStore:
    """`wide_dataset()`, written by zarr-python, behind a counting store."""
    path = fresh(name)
    write_with_zarr_python(wide_dataset(), local_path(path), zarr_format=3)
    return CountingStore(
        from_url(emulator.s3_url(path), storage_options=emulator.storage_options())
    )


async def test_load_async_of_several_variables_is_one_plan(
    emulator: Emulator, local_path: Callable[[str], Path]
) -> None:
    """The variables' reads go out as one `read_many`: one batch of requests in all."""
    store = _wide_dataset_counted(emulator, local_path, "one-plan")
    ds = xr.open_dataset(store, engine=ENGINE)
    names = [f"v{i}" for i in range(4)]
    store.reset()
    loaded = await ds[names].load_async()
    assert len(store.batches) == 1
    assert store.counts["get"] == 4
    for i, name in enumerate(names):
        np.testing.assert_array_equal(loaded[name].values, np.full((3, 2, 4, 5), float(i)))


def test_blocking_load_of_several_variables_is_one_plan(
    emulator: Emulator, local_path: Callable[[str], Path]
) -> None:
    """`aiozarr.xarray.load` reads the variables together; xarray's `load()` one by one."""
    store = _wide_dataset_counted(emulator, local_path, "one-plan-blocking")
    names = [f"v{i}" for i in range(4)]
    ds = xr.open_dataset(store, engine=ENGINE)[names]
    store.reset()
    loaded = aiozarr.xarray.load(ds)
    assert loaded is ds
    assert len(store.batches) == 1
    assert store.counts["get"] == 4
    for i, name in enumerate(names):
        np.testing.assert_array_equal(loaded[name].values, np.full((3, 2, 4, 5), float(i)))
    one_by_one = xr.open_dataset(store, engine=ENGINE)[names]
    store.reset()
    one_by_one.load()
    # the control: xarray's load, a read (a lone request) per variable
    assert store.counts["get"] == 4 and store.batches == []


def test_blocking_load_of_a_datatree_is_one_plan(
    emulator: Emulator, local_path: Callable[[str], Path]
) -> None:
    """`aiozarr.xarray.load` of a DataTree reads every group's variables together."""
    path = fresh("tree-load")
    groups = {"/a": wide_dataset()[["v0", "v1"]], "/a/b": wide_dataset()[["v2", "v3"]]}
    tree = xr.DataTree.from_dict({"/": xr.Dataset(), **groups})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(local_path(path), zarr_format=3, consolidated=False)
    store = CountingStore(
        from_url(emulator.s3_url(path), storage_options=emulator.storage_options())
    )
    opened = xr.open_datatree(store, engine=ENGINE)
    store.reset()
    assert aiozarr.xarray.load(opened) is opened
    assert len(store.batches) == 1
    assert store.counts["get"] == 4  # a chunk per variable; the coordinates were read at open
    xr.testing.assert_identical(
        opened, xr.open_datatree(local_path(path), engine="zarr", consolidated=False)
    )
    for name in ("a/v0", "a/v1", "a/b/v2", "a/b/v3"):
        assert opened[name].variable._in_memory, name  # loaded in place
        np.testing.assert_array_equal(opened[name].values, np.full((3, 2, 4, 5), int(name[-1])))


@pytest.mark.timeout(60)  # it deadlocked
@pytest.mark.parametrize("scheduler", ["threads", "synchronous"])
def test_load_of_a_dask_backed_dataset_computes_its_blocks(tmp_path: Path, scheduler: str) -> None:
    """`aiozarr.xarray.load` of a dataset opened with `chunks={}`: xarray's `load_async`
    computes dask variables with a blocking `compute`, whose tasks read through aiozarr's
    loop; run there, it deadlocked (threads) or raised SyncInLoopError (synchronous)."""
    import dask

    from aiozarr.xarray import load

    path = str(tmp_path / "d.zarr")
    xr.Dataset({"a": ("x", np.arange(6.0)), "b": ("x", np.ones(6))}).to_zarr(path, mode="w")
    ds = xr.open_dataset(path, engine="aiozarr", chunks={}, consolidated=False)
    ds["b"] = ds.b.compute().variable.to_base_variable()  # one in memory beside them
    ds["c"] = xr.open_dataset(path, engine="aiozarr", consolidated=False).a  # one lazy
    with dask.config.set(scheduler=scheduler):
        load(ds)
    np.testing.assert_array_equal(ds.a.values, np.arange(6.0))
    np.testing.assert_array_equal(ds.c.values, np.arange(6.0))
