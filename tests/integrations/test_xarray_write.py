"""`aiozarr.xarray.to_zarr` against `Dataset.to_zarr` (zarr-python) on the same data:
dask-backed variables, `compute=False`, `region="auto"`, `write_empty_chunks`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from dask.delayed import Delayed  # noqa: E402
from tests.integrations.xarray_peers import theirs  # noqa: E402

from aiozarr.dask import OverlappingWriteError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")


def dataset(n_time: int = 12) -> xr.Dataset:
    """dask-backed: packed temperatures with NaNs, CF times; one in-memory variable."""
    rng = np.random.default_rng(1)
    temp = rng.integers(0, 60, (n_time, 6, 8)) * 0.5
    temp[2, 1, :] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), temp, {"units": "degC"}),
            "count": (("time",), np.arange(n_time, dtype="i4")),
            "mask": (("y", "x"), rng.random((6, 8)) > 0.5),
        },
        coords={
            "time": pd.date_range("2020-01-01", periods=n_time, freq="D"),
            "y": np.arange(6.0),
            "x": np.arange(8.0),
        },
    )
    ds.temp.encoding = {"dtype": "int16", "scale_factor": 0.5, "_FillValue": -9999}
    return ds.chunk({"time": 4}).assign(mask=ds.mask)  # mask stays in memory


def open_both(ours: Path, ref: Path) -> tuple[xr.Dataset, xr.Dataset]:
    return xr.open_zarr(ours), xr.open_zarr(ref)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_dask_dataset_as_xarray_writes_it(tmp_path: Path, zarr_format: int) -> None:
    ds = dataset()
    to_zarr(ds, tmp_path / "ours.zarr", zarr_format=zarr_format)
    theirs(ds, tmp_path / "theirs.zarr", zarr_format=zarr_format)
    ours, ref = open_both(tmp_path / "ours.zarr", tmp_path / "theirs.zarr")
    xr.testing.assert_identical(ours.load(), ref.load())
    for name in ("temp", "count"):
        assert ours[name].encoding["chunks"] == ref[name].encoding["chunks"]
        assert ours[name].encoding["dtype"] == ref[name].encoding["dtype"]
    # blocks that would share a chunk are refused, as xarray refuses them
    bad = dataset().chunk({"time": (3, 5, 4)})
    with pytest.raises(OverlappingWriteError):
        to_zarr(bad, tmp_path / "bad.zarr", encoding={"temp": {"chunks": (4, 6, 8)}})
    with pytest.raises(ValueError):
        theirs(bad, tmp_path / "bad-theirs.zarr", encoding={"temp": {"chunks": (4, 6, 8)}})


def test_compute_false_returns_a_delayed_write(tmp_path: Path) -> None:
    ds = dataset()
    ours = to_zarr(ds, tmp_path / "ours.zarr", compute=False)
    ref = theirs(ds, tmp_path / "theirs.zarr", compute=False)
    assert isinstance(ours, Delayed)
    assert isinstance(ref, Delayed)
    # metadata, and the in-memory variables, are there at once; dask values are not
    before = xr.open_zarr(tmp_path / "ours.zarr").load()
    xr.testing.assert_identical(before, xr.open_zarr(tmp_path / "theirs.zarr").load())
    np.testing.assert_array_equal(before.mask.values, ds.mask.values)
    assert not before.temp.equals(ds.temp.compute())
    ours.compute()
    ref.compute()
    xr.testing.assert_identical(
        xr.open_zarr(tmp_path / "ours.zarr").load(), xr.open_zarr(tmp_path / "theirs.zarr").load()
    )
    # nothing dask-backed: nothing left to compute
    assert to_zarr(ds.compute(), tmp_path / "eager.zarr", compute=False) is None


@pytest.mark.parametrize("chunked", [False, True])
def test_region_auto_as_xarray(tmp_path: Path, chunked: bool) -> None:
    ds = dataset().compute()
    encoding = {"temp": {"chunks": (4, 6, 8)}, "count": {"chunks": (4,)}}
    for where in ("ours.zarr", "theirs.zarr"):
        theirs(ds, tmp_path / where, encoding=encoding)
    part = ds.isel(time=slice(4, 8)).drop_vars("mask")
    part["temp"] = part.temp + 1
    part["count"] = part["count"] * 10
    if chunked:
        part = part.chunk({"time": 4})
    to_zarr(part, tmp_path / "ours.zarr", region="auto")
    theirs(part, tmp_path / "theirs.zarr", region="auto")
    ours, ref = open_both(tmp_path / "ours.zarr", tmp_path / "theirs.zarr")
    xr.testing.assert_identical(ours.load(), ref.load())
    assert float(ours.temp.isel(time=5).max()) == float(ds.temp.isel(time=5).max()) + 1
    # dict form, one dimension auto
    to_zarr(part, tmp_path / "ours.zarr", region={"time": "auto", "y": slice(0, 6)})
    # values not in the store: the same KeyError as xarray's
    moved = part.assign_coords(time=part.time + np.timedelta64(100, "D"))
    with pytest.raises(KeyError, match="'time'"):
        to_zarr(moved, tmp_path / "ours.zarr", region="auto")
    with pytest.raises(KeyError):
        theirs(moved, tmp_path / "theirs.zarr", region="auto")
    with pytest.raises(ValueError, match="mode"):
        to_zarr(part, tmp_path / "ours.zarr", region="auto", mode="w")
    if chunked:  # a block that writes part of a chunk others may write: refused by both
        inside = part.isel(time=slice(1, 3))
        with pytest.raises(ValueError, match="region starts at 5"):
            to_zarr(inside, tmp_path / "ours.zarr", region="auto")
        with pytest.raises(ValueError, match="overlap"):
            theirs(inside, tmp_path / "theirs.zarr", region="auto")


def chunk_files(root: Path, name: str) -> set[str]:
    skip = {"zarr.json", ".zarray", ".zattrs"}
    return {
        str(p.relative_to(root / name))
        for p in (root / name).rglob("*")
        if p.is_file() and p.name not in skip
    }


@pytest.mark.parametrize("write_empty_chunks", [False, True])
@pytest.mark.parametrize("lazy", [False, True])
def test_write_empty_chunks_as_xarray(tmp_path: Path, write_empty_chunks: bool, lazy: bool) -> None:
    values = np.full((12, 4), np.nan)
    values[4:8] = 1.5  # one chunk of values, two of the fill value
    ds = xr.Dataset({"v": (("t", "x"), values)})
    ds = ds.chunk({"t": 4}) if lazy else ds
    encoding = {"v": {"chunks": (4, 4)}}
    kwargs = {"write_empty_chunks": write_empty_chunks, "encoding": encoding}
    to_zarr(ds, tmp_path / "ours.zarr", **kwargs)
    theirs(ds, tmp_path / "theirs.zarr", **kwargs)
    stored = chunk_files(tmp_path / "ours.zarr", "v")
    assert stored == chunk_files(tmp_path / "theirs.zarr", "v")
    assert len(stored) == (3 if write_empty_chunks else 1)
    ours, ref = open_both(tmp_path / "ours.zarr", tmp_path / "theirs.zarr")
    xr.testing.assert_identical(ours.load(), ref.load())


def codec_metadata(where: Path, name: str) -> dict[str, Any]:
    """The codec part of a stored array's metadata, as zarr-python reads it."""
    import zarr

    doc = zarr.open_array(where, path=name, mode="r").metadata.to_dict()
    return {k: doc.get(k) for k in ("codecs", "compressor", "filters")}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_python_codec_objects_in_encoding(tmp_path: Path, zarr_format: int) -> None:
    import numcodecs
    from zarr.codecs import BloscCodec, BytesCodec, GzipCodec

    ds = dataset().compute().drop_vars("mask").drop_encoding()
    if zarr_format == 3:
        encoding = {
            "temp": {"compressors": [BloscCodec(cname="zstd", clevel=3)]},  # typesize left
            "count": {"serializer": BytesCodec(endian="big"), "compressors": GzipCodec(level=1)},
            "x": {"compressors": None},  # no compression
        }
    else:
        encoding = {
            "temp": {"compressors": numcodecs.Blosc(cname="lz4")},
            "count": {"filters": [numcodecs.Delta(dtype="i4")], "compressors": None},
            "x": {"compressors": None},
        }
    to_zarr(ds, tmp_path / "ours.zarr", zarr_format=zarr_format, encoding=encoding)
    theirs(ds, tmp_path / "theirs.zarr", zarr_format=zarr_format, encoding=encoding)
    for name in ("temp", "count", "x"):
        ours_codecs = codec_metadata(tmp_path / "ours.zarr", name)
        assert ours_codecs == codec_metadata(tmp_path / "theirs.zarr", name), name
    ours, ref = open_both(tmp_path / "ours.zarr", tmp_path / "theirs.zarr")
    xr.testing.assert_identical(ours.load(), ref.load())
    # a dataset opened by engine="zarr" carries zarr-python codec objects in its
    # encoding: written again, the codecs are kept
    to_zarr(ref, tmp_path / "again.zarr", zarr_format=zarr_format)
    for name in ("temp", "count", "x"):
        again = codec_metadata(tmp_path / "again.zarr", name)
        assert again == codec_metadata(tmp_path / "theirs.zarr", name), name
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "again.zarr").load(), ref.load())


def test_encoding_argument_replaces_a_variables_encoding(tmp_path: Path) -> None:
    ds = dataset().compute()  # temp packed as int16 by its own encoding
    encoding = {"temp": {"chunks": (4, 6, 8)}}
    to_zarr(ds, tmp_path / "ours.zarr", encoding=encoding)
    theirs(ds, tmp_path / "theirs.zarr", encoding=encoding)
    ours, ref = open_both(tmp_path / "ours.zarr", tmp_path / "theirs.zarr")
    assert ours.temp.encoding["dtype"] == ref.temp.encoding["dtype"] == np.dtype("f8")
    assert ours.temp.encoding["chunks"] == ref.temp.encoding["chunks"] == (4, 6, 8)
    xr.testing.assert_identical(ours.load(), ref.load())
    # without the argument the variable's own encoding is used, by both
    to_zarr(ds, tmp_path / "own.zarr")
    assert xr.open_zarr(tmp_path / "own.zarr").temp.encoding["dtype"] == np.dtype("i2")


@pytest.mark.parametrize("lazy", [False, True])
def test_write_empty_chunks_in_encoding_as_xarray(tmp_path: Path, lazy: bool) -> None:
    values = np.full((12, 4), np.nan)
    values[4:8] = 1.5  # one chunk of values, two of the fill value
    ds = xr.Dataset({"v": (("t", "x"), values), "w": (("t", "x"), values.copy())})
    ds = ds.chunk({"t": 4}) if lazy else ds
    encoding = {
        "v": {"chunks": (4, 4), "write_empty_chunks": True},
        "w": {"chunks": (4, 4), "write_empty_chunks": False},
    }
    to_zarr(ds, tmp_path / "ours.zarr", encoding=encoding)
    theirs(ds, tmp_path / "theirs.zarr", encoding=encoding)
    for name, stored in (("v", 3), ("w", 1)):
        files = chunk_files(tmp_path / "ours.zarr", name)
        assert files == chunk_files(tmp_path / "theirs.zarr", name)
        assert len(files) == stored
    ours, ref = open_both(tmp_path / "ours.zarr", tmp_path / "theirs.zarr")
    xr.testing.assert_identical(ours.load(), ref.load())
    # the argument and an encoding that differ: refused by both
    with pytest.raises(ValueError, match="write_empty_chunks"):
        to_zarr(ds, tmp_path / "ours2.zarr", encoding=encoding, write_empty_chunks=False)
    with pytest.raises(ValueError, match="write_empty_chunks"):
        theirs(ds, tmp_path / "theirs2.zarr", encoding=encoding, write_empty_chunks=False)
