"""TensorStore writes, aiozarr reads identical values; and the other way round."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorstore as ts

import aiozarr


def _open(path: Path, driver: str, **spec):  # type: ignore[no-untyped-def]
    return ts.open(
        {"driver": driver, "kvstore": {"driver": "file", "path": str(path)}, **spec}
    ).result()


@pytest.mark.parametrize("dtype", ["int16", "float32", "uint64"])
def test_tensorstore_v3_sharded_to_aiozarr(tmp_path: Path, dtype: str) -> None:
    data = (np.arange(24 * 20) % 1000).astype(dtype).reshape(24, 20)
    store = ts.open(
        {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(tmp_path / "a.zarr")},
            "metadata": {
                "shape": list(data.shape),
                "data_type": dtype,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 10]}},
                "codecs": [
                    {
                        "name": "sharding_indexed",
                        "configuration": {
                            "chunk_shape": [4, 5],
                            "codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "zstd", "configuration": {"level": 1}},
                            ],
                            "index_codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "crc32c"},
                            ],
                        },
                    }
                ],
            },
            "create": True,
        }
    ).result()
    store[...] = data
    arr = aiozarr.open_array(str(tmp_path / "a.zarr"))
    assert np.array_equal(arr[...], data)
    assert np.array_equal(arr[3:21, 7], data[3:21, 7])


def test_tensorstore_v2_to_aiozarr(tmp_path: Path) -> None:
    data = np.arange(300, dtype="<f8").reshape(15, 20)
    store = ts.open(
        {
            "driver": "zarr",
            "kvstore": {"driver": "file", "path": str(tmp_path / "b.zarr")},
            "metadata": {
                "shape": [15, 20],
                "chunks": [4, 6],
                "dtype": "<f8",
                "compressor": {"id": "zlib", "level": 3},
            },
            "create": True,
        }
    ).result()
    store[...] = data
    assert np.array_equal(aiozarr.open_array(str(tmp_path / "b.zarr"))[...], data)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("sharded", [False, True])
def test_aiozarr_to_tensorstore(tmp_path: Path, zarr_format: int, sharded: bool) -> None:
    if sharded and zarr_format == 2:
        pytest.skip("v2 has no sharding")
    data = np.arange(21 * 13, dtype="int32").reshape(21, 13)
    arr = aiozarr.create_array(
        str(tmp_path / "c.zarr"),
        shape=data.shape,
        dtype="int32",
        chunks=(4, 5),
        shards=(8, 10) if sharded else None,
        zarr_format=zarr_format,
        fill_value=0,
    )
    arr[...] = data
    driver = "zarr3" if zarr_format == 3 else "zarr"
    assert np.array_equal(_open(tmp_path / "c.zarr", driver).read().result(), data)


def test_a_shard_with_unused_bytes_reads_as_in_tensorstore(tmp_path: Path) -> None:
    """An uncompressed shard TensorStore wrote, its inner chunk 0 then rewritten by
    appending (old bytes left, index rewritten): both read the same values whole."""
    path = tmp_path / "d.zarr"
    sharding = {"name": "sharding_indexed", "configuration": {"chunk_shape": [2]}}
    sharding["configuration"]["codecs"] = [{"name": "bytes", "configuration": {"endian": "little"}}]
    sharding["configuration"]["index_codecs"] = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "crc32c"},
    ]
    grid = {"name": "regular", "configuration": {"chunk_shape": [8]}}
    metadata = {"shape": [8], "data_type": "uint16", "chunk_grid": grid, "codecs": [sharding]}
    _open(path, "zarr3", metadata=metadata, create=True)[...] = np.arange(8, dtype="<u2")
    layout = aiozarr.open_array(str(path)).async_array.stored.layout
    assert layout is not None
    raw = (path / "c" / "0").read_bytes()
    table = np.array(layout.index_of_shard(raw, "c/0").offsets_and_lengths, dtype="<u8")
    data = raw[: -layout.index_size] + np.array([100, 101], "<u2").tobytes()
    table[0] = (len(data) - 4, 4)
    (path / "c" / "0").write_bytes(data + bytes(layout.index_chain.encode(table)))
    expected = [100, 101, 2, 3, 4, 5, 6, 7]
    assert _open(path, "zarr3").read().result().tolist() == expected
    assert aiozarr.open_array(str(path))[...].tolist() == expected
