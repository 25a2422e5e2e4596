"""zarr-python writes, aiozarr reads identical values; and the other way round."""

from __future__ import annotations

from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs

import aiozarr

CASES = [
    # (dtype, shape, chunks, fill_value)
    ("int32", (17, 9), (5, 4), 0),
    ("float64", (10, 10, 3), (4, 4, 2), np.nan),
    ("uint8", (33,), (8,), 255),
    ("complex64", (6, 7), (3, 3), 0),
    ("bool", (9, 9), (4, 5), False),
    (">i2", (12, 5), (5, 5), 3),
]


def _data(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(42)
    values = rng.integers(0, 100, size=shape)
    if np.dtype(dtype).kind == "b":
        return (values % 2).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * values[::-1]).astype(dtype)
    return values.astype(dtype)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("dtype", "shape", "chunks", "fill"), CASES)
def test_zarr_python_writes_aiozarr_reads(
    tmp_path: Path, zarr_format: int, dtype: str, shape, chunks, fill
) -> None:
    if zarr_format == 3 and np.dtype(dtype).byteorder == ">":
        pytest.skip("v3 stores byte order in the bytes codec, not the dtype")
    data = _data(dtype, shape)
    z = zarr.create_array(
        store=str(tmp_path / "a.zarr"),
        shape=shape,
        dtype=dtype,
        chunks=chunks,
        fill_value=fill,
        zarr_format=zarr_format,
    )
    z[...] = data
    z[0] = fill  # a chunk row equal to the fill value is not stored
    data[0] = fill
    arr = aiozarr.open_array(str(tmp_path / "a.zarr"))
    assert arr.dtype == np.dtype(dtype)
    assert np.array_equal(arr[...], data, equal_nan=np.dtype(dtype).kind in "fc")


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("dtype", "shape", "chunks", "fill"), CASES)
def test_aiozarr_writes_zarr_python_reads(
    tmp_path: Path, zarr_format: int, dtype: str, shape, chunks, fill
) -> None:
    data = _data(dtype, shape)
    arr = aiozarr.create_array(
        str(tmp_path / "a.zarr"),
        shape=shape,
        dtype=dtype,
        chunks=chunks,
        fill_value=fill,
        zarr_format=zarr_format,
    )
    arr[...] = data
    z = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
    assert z.shape == shape
    assert np.array_equal(z[...], data, equal_nan=np.dtype(dtype).kind in "fc")


@pytest.mark.parametrize("index_location", ["start", "end"])
def test_sharded_both_ways(tmp_path: Path, index_location: str) -> None:
    data = np.arange(40 * 30, dtype="float32").reshape(40, 30)
    z = zarr.create_array(
        store=str(tmp_path / "zp.zarr"),
        shape=data.shape,
        dtype=data.dtype,
        chunks=(5, 6),
        shards=(10, 12),
        fill_value=0,
        serializer=zarr.codecs.BytesCodec(),
        compressors=zarr.codecs.ZstdCodec(level=3),
    )
    if index_location == "start":  # rebuild the sharding codec with the index first
        z = zarr.create_array(
            store=str(tmp_path / "zp.zarr"),
            shape=data.shape,
            dtype=data.dtype,
            chunks=(10, 12),
            fill_value=0,
            overwrite=True,
            compressors=None,
            serializer=zarr.codecs.ShardingCodec(
                chunk_shape=(5, 6),
                codecs=[zarr.codecs.BytesCodec(), zarr.codecs.ZstdCodec()],
                index_location="start",
            ),
        )
    z[...] = data
    arr = aiozarr.open_array(str(tmp_path / "zp.zarr"))
    assert arr.shards == (10, 12) and arr.chunks == (5, 6)
    assert np.array_equal(arr[...], data)
    assert np.array_equal(arr[7:23, 5:17], data[7:23, 5:17])

    ours = aiozarr.create_array(
        str(tmp_path / "az.zarr"),
        shape=data.shape,
        dtype=data.dtype,
        chunks=(5, 6),
        shards=(10, 12),
    )
    ours[3:, :] = data[3:]
    expected = data.copy()
    expected[:3] = 0
    assert np.array_equal(zarr.open_array(str(tmp_path / "az.zarr"))[...], expected)


def test_v2_compressors_and_filters_both_ways(tmp_path: Path) -> None:
    data = np.linspace(0, 1, 600).reshape(20, 30)
    z = zarr.create_array(
        store=str(tmp_path / "zp.zarr"),
        shape=data.shape,
        dtype="f8",
        chunks=(7, 11),
        zarr_format=2,
        compressors=numcodecs.Blosc(cname="lz4", shuffle=1),
        filters=[numcodecs.Delta(dtype="f8")],
        order="F",
    )
    z[...] = data
    # Delta on floats rounds: both libraries must decode the same rounded values.
    assert np.array_equal(aiozarr.open_array(str(tmp_path / "zp.zarr"))[...], z[...])

    ours = aiozarr.create_array(
        str(tmp_path / "az.zarr"),
        shape=data.shape,
        dtype="f8",
        chunks=(7, 11),
        zarr_format=2,
        compressors=numcodecs.Zlib(level=5),
        order="F",
    )
    ours[...] = data
    assert np.array_equal(zarr.open_array(str(tmp_path / "az.zarr"))[...], data)


def test_groups_and_attributes_both_ways(tmp_path: Path) -> None:
    root = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", attributes={"title": "t"})
    sub = root.create_group("sub")
    sub.create_array("x", shape=(3,), dtype="i4", attributes={"units": "m"})[...] = [1, 2, 3]
    group = aiozarr.open_group(str(tmp_path / "g.zarr"))
    assert dict(group.attrs) == {"title": "t"}
    x = group["sub/x"]
    assert dict(x.attrs) == {"units": "m"}
    assert list(x[...]) == [1, 2, 3]
    assert group.member_names() == ["sub"]

    ours = aiozarr.create_group(str(tmp_path / "o.zarr"), attributes={"a": 1})
    ours.create_group("inner").create_array(
        "y", shape=(2, 2), dtype="f4", dimension_names=["r", "c"]
    )[...] = 5
    theirs = zarr.open_group(str(tmp_path / "o.zarr"), mode="r")
    assert dict(theirs.attrs) == {"a": 1}
    assert theirs["inner/y"].metadata.dimension_names == ("r", "c")
    assert np.all(theirs["inner/y"][...] == 5)


def test_nested_sharding_both_ways(tmp_path: Path) -> None:
    data = np.arange(16 * 16, dtype="i4").reshape(16, 16)
    nested = zarr.codecs.ShardingCodec(
        chunk_shape=(8, 8),
        codecs=[zarr.codecs.ShardingCodec(chunk_shape=(4, 4), codecs=[zarr.codecs.BytesCodec()])],
    )
    z = zarr.create_array(
        store=str(tmp_path / "zp.zarr"),
        shape=data.shape,
        dtype="i4",
        chunks=(16, 16),
        serializer=nested,
        compressors=None,
    )
    z[...] = data
    arr = aiozarr.open_array(str(tmp_path / "zp.zarr"))
    assert np.array_equal(arr[...], data)
    assert np.array_equal(arr[3:13, 5], data[3:13, 5])
    arr[0:4, 0:4] = -1  # written back by aiozarr, read by zarr-python
    expected = data.copy()
    expected[0:4, 0:4] = -1
    assert np.array_equal(zarr.open_array(str(tmp_path / "zp.zarr"))[...], expected)
