"""What codecs declare of themselves (role, partial decoding, reordering), and a chain
that reads a part of a shard through an array->array codec before `sharding_indexed`
because that codec declares it can."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.codecs import (
    ArrayToArrayCodec,
    ChunkSpec,
    CodecChain,
    CodecRole,
    layout_of,
    register_codec,
    registered_codecs,
)
from aiozarr.codecs.blosc import BloscCodec
from aiozarr.codecs.bytes import BytesCodec
from aiozarr.codecs.crc32c import Crc32cCodec
from aiozarr.codecs.gzip import GzipCodec
from aiozarr.codecs.numcodecs_v3 import numcodecs_class
from aiozarr.codecs.sharding import ShardingCodec
from aiozarr.codecs.transpose import TransposeCodec
from aiozarr.codecs.vlen import VlenUtf8Codec
from aiozarr.codecs.zstd import ZstdCodec
from aiozarr.errors import UnsupportedError
from aiozarr.metadata.model import CodecMetadata
from aiozarr.storage import CountingStore, MemoryStore
from aiozarr.sync import run


@pytest.mark.parametrize(
    ("cls", "role", "parts"),
    [
        (TransposeCodec, CodecRole.ARRAY_TO_ARRAY, True),
        (BytesCodec, CodecRole.ARRAY_TO_BYTES, False),
        (VlenUtf8Codec, CodecRole.ARRAY_TO_BYTES, False),
        (ShardingCodec, CodecRole.ARRAY_TO_BYTES, True),
        (GzipCodec, CodecRole.BYTES_TO_BYTES, False),
        (ZstdCodec, CodecRole.BYTES_TO_BYTES, False),
        (BloscCodec, CodecRole.BYTES_TO_BYTES, False),
        (Crc32cCodec, CodecRole.BYTES_TO_BYTES, False),
        (numcodecs_class("numcodecs.delta"), CodecRole.ARRAY_TO_ARRAY, False),
        (numcodecs_class("numcodecs.pcodec"), CodecRole.ARRAY_TO_BYTES, False),
        (numcodecs_class("numcodecs.zlib"), CodecRole.BYTES_TO_BYTES, False),
    ],
    ids=lambda v: getattr(v, "name", None) or str(v),
)
def test_each_codec_declares_its_role_and_whether_it_decodes_parts(
    cls: Any, role: CodecRole, parts: bool
) -> None:
    assert cls.role is role
    assert cls.decodes_parts is parts


def test_every_registered_codec_declares_a_role() -> None:
    for name, cls in registered_codecs().items():
        assert isinstance(cls.role, CodecRole), name


def test_transpose_declares_a_pure_reordering() -> None:
    codec = TransposeCodec((2, 0, 1))
    assert codec.axis_order(3) == (2, 0, 1) and not codec.elementwise
    assert TransposeCodec("F").axis_order(3) == (2, 1, 0)
    assert TransposeCodec("C").axis_order(2) == (0, 1)
    assert numcodecs_class("numcodecs.delta")(dtype="<i4").axis_order(3) is None


def test_the_bytes_codec_declares_its_output_a_view_of_the_elements() -> None:
    assert BytesCodec("little").memory_dtype(np.dtype("<i4")) == np.dtype("<i4")
    assert BytesCodec("big").memory_dtype(np.dtype("<i4")) == np.dtype(">i4")
    assert BytesCodec().memory_dtype(np.dtype("O")) is None
    assert VlenUtf8Codec().memory_dtype(np.dtype("O")) is None


# -- array->array codecs before sharding, declared -------------------------------------------


class ReversedAxes(ArrayToArrayCodec):
    """Stores a chunk with its axes reversed: a codec that only reorders axes, not a
    transpose (the chain knows it only by what it declares)."""

    name = "test.reversed_axes"
    decodes_parts = True

    def configuration(self) -> dict[str, Any]:
        return {}

    def axis_order(self, ndim: int) -> tuple[int, ...]:
        return tuple(range(ndim))[::-1]

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec(spec.shape[::-1], spec.dtype, spec.fill_value)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(self.axis_order(array.ndim))

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(self.axis_order(array.ndim))


class Negated(ArrayToArrayCodec):
    """Stores each element negated: each element alone, in its place (0 stays 0)."""

    name = "test.negated"
    decodes_parts = True
    elementwise = True

    def configuration(self) -> dict[str, Any]:
        return {}

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return np.negative(array)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return np.negative(array)


class Flattened(ArrayToArrayCodec):
    """Stores a chunk as one axis: declares nothing, so no part of it is read alone."""

    name = "test.flattened"

    def configuration(self) -> dict[str, Any]:
        return {}

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec((int(np.prod(spec.shape)),), spec.dtype, spec.fill_value)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.reshape(-1)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.reshape(spec.shape)


for _codec in (ReversedAxes, Negated, Flattened):  # names no writer uses
    register_codec(_codec)


def _sharding(stored_inner: list[int]) -> dict[str, Any]:
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": stored_inner,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"},
            ],
            "index_location": "end",
        },
    }


SHAPE = (12, 8, 10)
SHARD = (6, 8, 10)  # on the array's axes; stored reversed: (10, 8, 6)
FILTERS = {
    "reversed": [{"name": "test.reversed_axes"}],
    "negated": [{"name": "test.negated"}],
    "negated, reversed, transposed": [
        {"name": "test.negated"},
        {"name": "test.reversed_axes"},
        {"name": "transpose", "configuration": {"order": [1, 0, 2]}},
    ],
}


def _stored_inner(filters: list[dict[str, Any]]) -> list[int]:
    """Inner chunks of (3, 4, 5) on the array's axes, on the axes the shard is stored on."""
    chain = CodecChain.from_codecs(
        [CodecMetadata(f["name"], f.get("configuration", {})) for f in filters]
        + [CodecMetadata("bytes", {"endian": "little"})],
        ChunkSpec(SHARD, np.dtype("i4"), 0),
    )
    axes = chain.encoded_axes() or (0, 1, 2)
    return [(3, 4, 5)[a] for a in axes]


@pytest.mark.parametrize("filters", sorted(FILTERS))
def test_a_declared_codec_before_sharding_reads_a_part_alone(filters: str) -> None:
    codecs = FILTERS[filters]
    store = CountingStore(MemoryStore())
    values = np.arange(np.prod(SHAPE), dtype="i4").reshape(SHAPE) - 500
    arr = aiozarr.create_array(
        store,
        shape=SHAPE,
        chunks=SHARD,
        dtype="i4",
        fill_value=0,
        filters=codecs,
        serializer=_sharding(_stored_inner(codecs)),
        compressors=None,
    )
    arr[...] = values
    again = aiozarr.open_array(store, mode="r")
    assert again.chunks == (3, 4, 5)  # inner chunks, on the array's axes
    for selection in [(slice(2, 5), slice(1, 7), slice(3, 9)), (7, 5, slice(None)), (11, 7, 9)]:
        np.testing.assert_array_equal(again[selection], values[selection])
    # a part is read alone: the shard's index, then the one inner chunk
    fresh = aiozarr.open_array(store, mode="r")
    store.reset()
    assert fresh[7, 5, 6] == values[7, 5, 6]
    assert store.counts["get"] == 2
    # the whole shard, decoded by the chain as one chunk, says the same
    shard = run(store.get, "c/0/0/0")
    np.testing.assert_array_equal(
        CodecChain.from_metadata(again.metadata).decode(shard), values[:6]
    )


def test_an_undeclared_codec_before_sharding_is_refused_by_name() -> None:
    chain = CodecChain.from_codecs(
        [CodecMetadata("test.flattened", {}), ShardingCodec([60])],
        ChunkSpec((6, 10), np.dtype("i4"), 0),
    )
    with pytest.raises(UnsupportedError, match=r"'test\.flattened'.*does not decode parts"):
        layout_of(chain)
    # without sharding, the same codec encodes and decodes whole chunks
    plain = CodecChain.from_codecs(
        [CodecMetadata("test.flattened", {}), CodecMetadata("bytes", {"endian": "little"})],
        ChunkSpec((6, 10), np.dtype("i4"), 0),
    )
    values = np.arange(60, dtype="i4").reshape(6, 10)
    np.testing.assert_array_equal(plain.decode(plain.encode(values)), values)
    assert layout_of(plain) is None


CASTS = [
    {"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "clamp"}},
    # float32: 0.1 * 0.1 / 0.1 is 0.10000001
    {"name": "scale_offset", "configuration": {"offset": 0, "scale": 0.1}},
]


@pytest.mark.parametrize("cast", CASTS, ids=["cast_value", "scale_offset"])
def test_a_codec_that_loses_the_fill_value_before_sharding_reads_whole_shards(
    cast: dict[str, Any],
) -> None:
    # sharding after the codec fills a missing inner chunk with the fill value as the
    # codec encodes it: read alone, it would be the array's fill value, where the spec
    # (and zarr-python) decode the stored fill; so the shard is read and decoded whole
    store = CountingStore(MemoryStore())
    arr = aiozarr.create_array(
        store,
        shape=(8,),
        chunks=(4,),
        dtype="float32",
        fill_value=0.1,
        filters=[cast],
        serializer=_sharding([2]),
        compressors=None,
    )
    values = np.array([0.1, 0.1, 5, 6], dtype="float32")
    arr[:4] = values
    chain = CodecChain.from_metadata(arr.metadata)
    assert not chain.reads_inner_chunks() and arr.chunks == (2,) and arr.shards == (4,)
    stored = chain.decode(chain.encode(values))  # each value after the codec and back
    expected = np.concatenate([stored, np.full(4, 0.1, dtype="float32")])  # shard 1 missing
    store.reset()
    np.testing.assert_array_equal(arr[:], expected)
    store.reset()
    assert arr[0] == stored[0]
    assert store.counts["get"] == 1  # the shard, whole (no index read, no range)


def test_a_codec_that_keeps_the_fill_value_before_sharding_reads_inner_chunks() -> None:
    spec = ChunkSpec((4,), np.dtype("float32"), np.float32(0.5))
    for codec in CASTS:
        chain = CodecChain.from_codecs(
            [CodecMetadata(codec["name"], codec["configuration"]), ShardingCodec([2])], spec
        )
        # 0.5 -> uint8 rounds to 0 (lost); 0.5 * 0.1 / 0.1 is 0.5 (kept)
        assert chain.reads_inner_chunks() is (codec["name"] == "scale_offset")
