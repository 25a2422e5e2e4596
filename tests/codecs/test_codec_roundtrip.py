"""Hypothesis: any valid chain decodes what it encodes, sharded or not."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aiozarr.codecs import ChunkSpec, CodecChain, layout_of
from aiozarr.metadata.model import CodecMetadata

DTYPES = st.sampled_from(["<i1", "<u2", ">i4", "<f4", ">f8", "<c8", "|b1", "<i8"])

BYTES_TO_BYTES = st.sampled_from(
    [
        CodecMetadata("gzip", {"level": 1}),
        CodecMetadata("zstd", {"level": 1, "checksum": True}),
        CodecMetadata("blosc", {"cname": "lz4", "clevel": 3, "shuffle": "shuffle"}),
        CodecMetadata("blosc", {"cname": "zstd", "clevel": 1, "shuffle": "bitshuffle"}),
        CodecMetadata("crc32c"),
    ]
)


@st.composite
def chunk_and_codecs(draw: Any) -> tuple[np.ndarray, list[CodecMetadata]]:
    dtype = np.dtype(draw(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
    values = draw(hnp.arrays(dtype, shape, elements={"allow_nan": False}))
    codecs = []
    if draw(st.booleans()):
        order = draw(st.permutations(range(len(shape))))
        codecs.append(CodecMetadata("transpose", {"order": list(order)}))
    codecs.append(CodecMetadata("bytes", {"endian": draw(st.sampled_from(["little", "big"]))}))
    codecs += draw(st.lists(BYTES_TO_BYTES, max_size=2))
    return values, codecs


@settings(max_examples=60, deadline=None)
@given(chunk_and_codecs())
def test_chain_round_trip(case: tuple[np.ndarray, list[CodecMetadata]]) -> None:
    values, codecs = case
    chain = CodecChain.from_codecs(codecs, ChunkSpec(values.shape, values.dtype, 0), "k")
    encoded = chain.encode(values)
    size = chain.encoded_size()
    assert size is None or size == len(encoded)
    np.testing.assert_array_equal(chain.decode(encoded, "k"), values)
    out = np.empty_like(values)
    chain.decode_into(encoded, out, "k")
    np.testing.assert_array_equal(out, values)


@st.composite
def shard_case(draw: Any) -> tuple[np.ndarray, list[CodecMetadata], int]:
    ndim = draw(st.integers(1, 3))
    inner = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    per_shard = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    shape = tuple(i * p for i, p in zip(inner, per_shard, strict=True))
    fill = 5
    # Mostly fill value, so that some inner chunks are empty.
    values = draw(hnp.arrays(np.dtype("<i2"), shape, elements=st.sampled_from([fill, fill, 1, -9])))
    inner_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if draw(st.booleans()):
        inner_codecs.append({"name": "zstd", "configuration": {"level": 1, "checksum": False}})
    config = {
        "chunk_shape": inner,
        "codecs": inner_codecs,
        "index_codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "crc32c"},
        ],
        "index_location": draw(st.sampled_from(["start", "end"])),
    }
    return values, [CodecMetadata("sharding_indexed", config)], fill


@settings(max_examples=40, deadline=None)
@given(shard_case())
def test_shard_round_trip(case: tuple[np.ndarray, list[CodecMetadata], int]) -> None:
    values, codecs, fill = case
    spec = ChunkSpec(values.shape, values.dtype, np.int16(fill))
    chain = CodecChain.from_codecs(codecs, spec, "s")
    encoded = chain.encode(values)
    np.testing.assert_array_equal(chain.decode(encoded, "s"), values)
    layout = layout_of(chain)
    index = layout.index_of_shard(encoded, "s")
    for coords in np.ndindex(*layout.chunks_per_shard):
        block = values[layout.inner_selection(coords)]
        assert (index.range_of(coords) is None) == bool((block == fill).all())
