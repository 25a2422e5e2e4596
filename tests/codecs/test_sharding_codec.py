"""`sharding_indexed`: layout, index, shard assembly, nesting, and byte-exact interop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

from aiozarr.byte_range import ByteRange
from aiozarr.codecs import ChunkSpec, CodecChain, ShardingCodec, ShardLayout, get_codec, layout_of
from aiozarr.codecs.sharding import EMPTY, ShardIndex, morton_order
from aiozarr.errors import ChecksumError, CodecError, MetadataError
from aiozarr.metadata.model import ArrayMetadata, CodecMetadata

LE = {"name": "bytes", "configuration": {"endian": "little"}}
SPEC = ChunkSpec((8, 6), np.dtype("<i4"), -1)


def sharding(**config: Any) -> ShardingCodec:
    config.setdefault("chunk_shape", [4, 3])
    # sharding 1.0 requires index_codecs; left out, it is a pre-1.0 quirk (with a warning)
    config.setdefault("index_codecs", [LE, {"name": "crc32c"}])
    codec = get_codec(CodecMetadata("sharding_indexed", config), "a/zarr.json")
    assert isinstance(codec, ShardingCodec)
    return codec


def values_with_empty_inner_chunk() -> np.ndarray:
    values = np.arange(48, dtype="<i4").reshape(8, 6)
    values[4:8, 0:3] = -1  # inner chunk (1, 0) is all fill value
    return values


@pytest.mark.parametrize(
    ("location", "index_codecs", "index_size"),
    [
        ("end", None, 4 * 16 + 4),
        ("start", None, 4 * 16 + 4),
        ("end", [LE], 4 * 16),
        ("start", [{"name": "bytes", "configuration": {"endian": "big"}}], 4 * 16),
    ],
)
def test_round_trip_and_index(
    location: str, index_codecs: list[dict[str, Any]] | None, index_size: int
) -> None:
    config: dict[str, Any] = {"index_location": location}
    if index_codecs is not None:
        config["index_codecs"] = index_codecs
    codec = sharding(**config)
    layout = codec.layout(SPEC)
    assert layout is codec.layout(ChunkSpec((8, 6), np.dtype("<i4"), -1))  # cached
    assert layout.chunks_per_shard == (2, 2)
    assert layout.index_size == index_size
    expected_range = (
        ByteRange.last(index_size) if location == "end" else ByteRange.of(0, index_size)
    )
    assert layout.index_range == expected_range

    values = values_with_empty_inner_chunk()
    shard = codec.encode(values, SPEC)
    assert len(shard) == index_size + 3 * 12 * 4
    np.testing.assert_array_equal(codec.decode(shard, SPEC), values)

    start, stop = layout.index_range.resolve(len(shard))
    index = layout.decode_index(shard[start:stop], "a/c/0/0")
    assert index.range_of((1, 0)) is None
    assert not index.is_empty
    assert index.nbytes == 2 * 2 * 2 * 8
    # Each stored inner chunk decodes on its own from its byte range.
    for coords in [(0, 0), (0, 1), (1, 1)]:
        byte_range = index.range_of(coords)
        assert byte_range is not None and byte_range.length == 48
        lo, hi = byte_range.resolve(len(shard))
        inner = layout.inner_chain.decode(shard[lo:hi], "a/c/0/0")
        np.testing.assert_array_equal(inner, values[layout.inner_selection(coords)])


def test_encode_shard_with_missing_and_empty_chunks() -> None:
    layout = sharding().layout(SPEC)
    assert layout.encode_shard({}) is None
    assert layout.encode_shard({(0, 0): None, (1, 1): b""}) is None
    inner = bytes(layout.inner_chain.encode(np.full((4, 3), 7, dtype="<i4")))
    shard = layout.encode_shard({(0, 1): inner, (1, 0): None})
    assert shard is not None
    index = layout.index_of_shard(shard, "k")
    assert index.range_of((0, 1)) == ByteRange.of(0, 48)
    assert [index.range_of(c) for c in [(0, 0), (1, 0), (1, 1)]] == [None] * 3
    decoded = layout.decode_shard(shard, "k")
    assert (decoded[0:4, 3:6] == 7).all()
    assert (decoded[4:8] == -1).all() and (decoded[0:4, 0:3] == -1).all()


def test_all_fill_shard_encodes_to_index_only() -> None:
    codec = sharding()
    shard = codec.encode(np.full((8, 6), -1, dtype="<i4"), SPEC)
    layout = codec.layout(SPEC)
    assert len(shard) == layout.index_size
    assert layout.index_of_shard(shard, "k").is_empty
    assert (codec.decode(shard, SPEC) == -1).all()


def test_corrupt_index_raises_checksum_error_naming_the_shard() -> None:
    codec = sharding()
    layout = codec.layout(SPEC)
    shard = bytearray(codec.encode(values_with_empty_inner_chunk(), SPEC))
    shard[-10] ^= 0x01
    named = r"^shard 'arr/c/1/2': its index: codec 'crc32c': checksum mismatch"
    with pytest.raises(ChecksumError, match=named):
        layout.index_of_shard(bytes(shard), "arr/c/1/2")
    with pytest.raises(ChecksumError, match=named):
        layout.decode_index(bytes(shard[-layout.index_size :]), "arr/c/1/2")
    with pytest.raises(CodecError, match=r"arr/c/1/2.*index is 10 bytes"):
        layout.decode_index(b"\x00" * 10, "arr/c/1/2")
    with pytest.raises(CodecError, match="shorter"):
        layout.index_of_shard(b"\x00" * 10, "arr/c/1/2")


def test_index_pointing_past_the_shard_is_codec_error() -> None:
    layout = sharding(index_codecs=[LE]).layout(SPEC)
    table = np.full((2, 2, 2), EMPTY, dtype="<u8")
    table[0, 0] = (0, 1000)
    with pytest.raises(CodecError, match=r"outside bytes \[0, 0\) of the 64-byte shard"):
        layout.index_of_shard(table.tobytes(), "s")


def test_configuration_is_validated() -> None:
    spec = ChunkSpec((8, 6), np.dtype("<i4"), 0)
    with pytest.raises(MetadataError, match=r"a/zarr\.json.*divide"):
        CodecChain.from_codecs([sharding(chunk_shape=[3, 3])], spec, "a/zarr.json")
    gz = [LE, {"name": "gzip", "configuration": {"level": 1}}]
    with pytest.raises(MetadataError, match="fixed"):
        CodecChain.from_codecs([sharding(index_codecs=gz)], spec, "a/zarr.json")
    with pytest.raises(MetadataError, match=r"a/zarr\.json.*index_location"):
        sharding(index_location="middle")
    with pytest.raises(MetadataError, match="chunk_shape"):
        sharding(chunk_shape=[0, 2])


def test_nested_sharding_round_trip() -> None:
    spec = ChunkSpec((16, 12), np.dtype("<f4"), 0.0)
    inner_sharding = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2, 3],
            "codecs": [LE, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
            "index_codecs": [LE, {"name": "crc32c"}],
            "index_location": "start",
        },
    }
    outer = sharding(chunk_shape=[8, 6], codecs=[inner_sharding])
    chain = CodecChain.from_codecs([outer], spec, "n")
    assert chain.array_to_bytes is outer and outer.decodes_parts
    values = np.arange(16 * 12, dtype="<f4").reshape(16, 12)
    values[8:, :6] = 0
    encoded = chain.encode(values)
    np.testing.assert_array_equal(chain.decode(encoded, "n/c/0/0"), values)
    layout: ShardLayout = outer.layout(spec)
    assert layout_of(layout.inner_chain) is not None
    assert layout.index_of_shard(encoded, "n").range_of((1, 0)) is None


def test_morton_order_matches_zarr_python() -> None:
    from zarr.core import indexing

    # zarr-python 3.1 names it `morton_order_iter`, 3.4 `morton_order_coords`
    zarrs = getattr(indexing, "morton_order_coords", None) or indexing.morton_order_iter
    for shape in [(4,), (2, 2), (3, 5), (4, 1, 3), (1, 1), (8, 2, 2)]:
        assert list(morton_order(shape)) == [tuple(c) for c in zarrs(shape)]


# --- interop with zarr-python ---------------------------------------------------------------


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("compressors", [None, zarr.codecs.ZstdCodec(level=2)])
def test_shards_are_byte_exact_with_zarr_python(
    tmp_path: Path, location: str, compressors: Any
) -> None:
    shape, shard_shape, inner_shape = (12, 10), (8, 10), (4, 5)
    values = np.arange(120, dtype="<u2").reshape(shape)
    values[0:4, 5:10] = 3  # an inner chunk equal to the fill value: not stored
    theirs = zarr.create_array(
        store=str(tmp_path / "a"),
        shape=shape,
        dtype="<u2",
        chunks=inner_shape,
        shards={"shape": shard_shape, "index_location": location},
        compressors=compressors,
        fill_value=3,
    )
    theirs[...] = values
    doc = json.loads((tmp_path / "a" / "zarr.json").read_text())
    codecs = tuple(CodecMetadata(c["name"], c.get("configuration", {})) for c in doc["codecs"])
    assert codecs[0].configuration["index_location"] == location
    meta = ArrayMetadata(shape, np.dtype("<u2"), shard_shape, np.uint16(3), codecs=codecs)
    chain = CodecChain.from_metadata(meta, "a/zarr.json")
    layout = layout_of(chain)

    shard_path = tmp_path / "a" / "c" / "0" / "0"
    stored = shard_path.read_bytes()
    assert layout.index_of_shard(stored, "a/c/0/0").range_of((0, 1)) is None
    np.testing.assert_array_equal(chain.decode(stored, "a/c/0/0"), values[:8])
    assert bytes(chain.encode(values[:8])) == stored  # byte-exact, Morton order included

    # zarr-python reads a shard we encode (an edge shard, padded with the fill value).
    edge = np.full(shard_shape, 3, dtype="<u2")
    edge[:4] = values[8:] * 2
    (tmp_path / "a" / "c" / "1" / "0").write_bytes(bytes(chain.encode(edge)))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"))[8:], values[8:] * 2)


def test_inner_chunks_not_stored_decode_as_the_fill_itself() -> None:
    """Each missing element is the fill value as given: bytes ending in NUL keep it
    (numpy's `full` passed them through a fixed-size string, which strips it)."""
    spec = ChunkSpec((4,), np.dtype(object), b"q\x00")
    codec = sharding(chunk_shape=[2], codecs=[{"name": "vlen-bytes"}])
    layout = codec.layout(spec)
    stored = np.array([b"z", b"y"], dtype=object)
    shard = layout.encode_shard({(0,): bytes(layout.inner_chain.encode(stored))})
    assert codec.decode(shard, spec).tolist() == [b"z", b"y", b"q\x00", b"q\x00"]


@pytest.mark.parametrize("grid", [(), (5,), (3, 4), (2, 3, 2)])
def test_ranges_of_many_inner_chunks_are_range_of_each(grid: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(grid))
    table = rng.integers(0, 1 << 40, size=(*grid, 2), dtype=np.uint64)
    flat = table.reshape(-1, 2)
    flat[:: max(2, flat.shape[0] // 2)] = EMPTY  # some inner chunks not stored
    index = ShardIndex(table)
    coords = [tuple(int(i) for i in c) for c in np.ndindex(*grid)]
    rng.shuffle(coords)
    picked = coords + coords[:2]  # in any order, repeats too
    assert index.ranges_of(picked) == [index.range_of(c) for c in picked]
    assert index.ranges_of([]) == []
