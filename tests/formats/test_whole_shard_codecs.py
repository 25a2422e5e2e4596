"""Shards compressed whole (bytes->bytes codecs after `sharding_indexed`, as zarr-python
writes for `serializer=ShardingCodec(...)` with a compressor): no range of the stored
shard is an inner chunk or the index, so aiozarr reads, decodes and writes each shard
whole, and reads what zarr-python wrote as zarr-python does, and the reverse."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, ZstdCodec

import aiozarr

VALUES = np.arange(48, dtype="f8").reshape(6, 8)
AFTER: dict[str, Any] = {
    "zstd": ZstdCodec(),
    "gzip": GzipCodec(),
    "crc32c": Crc32cCodec(),
    # stores the shard raw behind a 16-byte header: read as a shard, every offset was off
    "blosc-raw": BloscCodec(cname="lz4", clevel=0, shuffle="noshuffle"),
}


def _zarr_array(path: Path, after: Any, **options: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns of codecs after sharding
        return zarr.create_array(
            str(path),
            shape=VALUES.shape,
            dtype="f8",
            chunks=(4, 4),
            serializer=ShardingCodec(chunk_shape=(2, 2), index_codecs=[BytesCodec()]),
            compressors=after,
            fill_value=-1.0,
            **options,
        )


@pytest.mark.parametrize("name", sorted(AFTER))
def test_reads_what_zarr_python_wrote(tmp_path: Path, name: str) -> None:
    theirs = _zarr_array(tmp_path / "a", AFTER[name])
    theirs[:5, 1:] = VALUES[:5, 1:]
    arr = aiozarr.open_array(tmp_path / "a")
    np.testing.assert_array_equal(arr[:], theirs[:])
    assert arr[1, 1] == theirs[1, 1]
    np.testing.assert_array_equal(arr.oindex[[4, 0], [7, 2]], theirs.oindex[[4, 0], [7, 2]])
    assert (arr.chunks, arr.shards, arr.is_sharded) == ((2, 2), (4, 4), True)


@pytest.mark.parametrize("name", sorted(AFTER))
def test_writes_what_zarr_python_reads(tmp_path: Path, name: str) -> None:
    _zarr_array(tmp_path / "a", AFTER[name])
    arr = aiozarr.open_array(tmp_path / "a")
    arr[:] = VALUES
    arr[1:3, 2:7] = -5.0  # part of two shards: read, merged and written whole
    expected = VALUES.copy()
    expected[1:3, 2:7] = -5.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[:], expected)
    np.testing.assert_array_equal(arr[:], expected)


def test_created_by_aiozarr(tmp_path: Path) -> None:
    arr = aiozarr.create_array(
        tmp_path / "a",
        shape=VALUES.shape,
        dtype="f8",
        chunks=(4, 4),
        serializer=ShardingCodec(chunk_shape=(2, 2)),
        compressors=[ZstdCodec()],
    )
    arr[:] = VALUES
    assert (tmp_path / "a" / "c" / "0" / "0").read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # zstd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[:], VALUES)


@pytest.mark.parametrize("kind", ["zstd after", "cast_value before"])
def test_a_broken_whole_shard_is_an_error_naming_its_key(tmp_path: Path, kind: str) -> None:
    # a shard read whole decoded its index with no key: "shard '': ... index"
    options: dict[str, Any] = {"compressors": None}
    if kind == "zstd after":
        options["compressors"] = [ZstdCodec()]
    else:  # 0.5 cast to uint8 is 0: shards are read whole
        options["filters"] = [{"name": "cast_value", "configuration": {"data_type": "uint8"}}]
    index = [{"name": "bytes", "configuration": {"endian": "little"}}]
    arr = aiozarr.create_array(
        tmp_path / "a",
        shape=VALUES.shape,
        dtype="f8",
        chunks=(4, 4),
        fill_value=0.5,
        serializer={
            "name": "sharding_indexed",
            "configuration": {"chunk_shape": [2, 2], "index_codecs": index},
        },
        **options,
    )
    arr[:] = VALUES
    stored = tmp_path / "a" / "c" / "0" / "1"
    if kind == "zstd after":
        import zstandard

        stored.write_bytes(zstandard.compress(b"\x01" * 10))
    else:
        stored.write_bytes(stored.read_bytes()[:10])
    with pytest.raises(aiozarr.errors.CodecError, match=r"shard 'c/0/1': 10 bytes is shorter"):
        aiozarr.open_array(tmp_path / "a")[0, 5]


def _cast_fill_lost(path: Path) -> Any:
    # 0.3 cast to uint8 is 0, which decodes to 0.0: shards are read whole
    return aiozarr.create_array(
        path,
        shape=(8,),
        dtype="f8",
        chunks=(4,),
        fill_value=0.3,
        filters=[{"name": "cast_value", "configuration": {"data_type": "uint8"}}],
        serializer={"name": "sharding_indexed", "configuration": {"chunk_shape": [2]}},
        compressors=None,
    )


def test_a_shard_whose_inner_chunks_all_encode_to_the_fill_is_not_stored(
    tmp_path: Path,
) -> None:
    # zarr-python's sharding codec stores no shard whose inner chunks are all the fill
    # value as encoded (0 here): it reads as the array's fill value, 0.3. aiozarr stored
    # an index-only shard, whose inner chunks read as 0 decoded, 0.0
    arr = _cast_fill_lost(tmp_path / "a")
    arr[:2] = [0.2, 0.1]
    arr[4:7] = [0.2, 1.6, 0.4]
    assert sorted(p.name for p in (tmp_path / "a" / "c").iterdir()) == ["1"]
    np.testing.assert_array_equal(arr[:], [0.3] * 4 + [0.0, 2.0, 0.0, 0.0])
    with aiozarr.config.set(write_empty_chunks=True):  # stored: 0 decoded
        arr[:2] = [0.2, 0.1]
    np.testing.assert_array_equal(arr[:4], [0.0] * 4)


def test_a_fill_no_encoded_value_equals_still_keeps_the_shard(tmp_path: Path) -> None:
    # numcodecs' astype passes the float64 fill 0.1 on unencoded, as in zarr-python,
    # whose sharding codec then finds no float32 inner chunk equal to it: the shard
    # stays, and its inner chunks read float32(0.1), not the fill value
    arr = aiozarr.create_array(
        tmp_path / "a",
        shape=(7, 2),
        dtype="f8",
        chunks=(6, 2),
        fill_value=0.1,
        filters=[
            {
                "name": "numcodecs.astype",
                "configuration": {"encode_dtype": "<f4", "decode_dtype": "<f8"},
            }
        ],
        serializer={"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2]}},
        compressors=None,
    )
    arr[0] = 2.5
    arr[0] = 0.1
    assert (tmp_path / "a" / "c" / "0" / "0").exists()
    np.testing.assert_array_equal(arr[:6], np.full((6, 2), np.float32(0.1), dtype="f8"))


def test_chunks_initialized_count_whole_shards_as_nchunks_does(tmp_path: Path) -> None:
    # nchunks counted the shards read whole, nchunks_initialized their inner chunks:
    # info said "Chunks initialized : 3 of 2"
    arr = aiozarr.create_array(
        tmp_path / "a",
        shape=(12,),
        dtype="f8",
        chunks=(6,),
        serializer=ShardingCodec(chunk_shape=(2,)),
        compressors=[ZstdCodec()],
    )
    arr[:3] = 1.0
    cast = _cast_fill_lost(tmp_path / "b")
    cast[:3] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_array(str(tmp_path / "a"), mode="r")
        assert (theirs.nchunks_initialized, theirs.nchunks) == (1, 2)
    for ours in (arr, cast):
        assert (ours.nchunks_initialized, ours.nchunks) == (1, 2)
        assert ours.info_complete().splitlines()[-1].endswith("1 of 2")
