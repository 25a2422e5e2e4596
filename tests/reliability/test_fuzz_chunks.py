"""Hostile chunks: corrupt, truncated, random or bomb bytes give `aiozarr.errors` only.

Each codec chain (v3 codecs and the v2 numcodecs bridge) decodes a valid chunk with bit
flips, truncation, garbage appended or replaced by random bytes: the result is a chunk of
the right shape or an aiozarr error. A decompression bomb (a few KB that inflate to 64 MiB)
fails having allocated no more than the chunk's decoded size (traced by tracemalloc).
"""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Callable
from typing import Any

import numcodecs
import numpy as np
import pytest
from fuzzing import FULL_EXAMPLES, FUZZ_EXAMPLES, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from aiozarr.codecs import CodecChain
from aiozarr.errors import AiozarrError, CodecError
from aiozarr.nodes.creation import array_metadata

SHAPE = (16, 16)
_V3_COMPRESSORS: dict[str, Any] = {
    "none": None,
    "gzip": [{"name": "gzip", "configuration": {"level": 1}}],
    "zstd": [{"name": "zstd", "configuration": {"level": 1, "checksum": True}}],
    "blosc": [{"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "shuffle"}}],
    "crc32c": [{"name": "crc32c"}],
    "zstd+crc32c": [{"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}],
}
_V2_COMPRESSORS = ["zlib", "gzip", "bz2", "lzma", "lz4", "zstd", "blosc"]


def _chains() -> dict[str, tuple[CodecChain, np.ndarray]]:
    data = np.arange(256, dtype="<i4").reshape(SHAPE) % 7
    chains: dict[str, tuple[CodecChain, np.ndarray]] = {}
    for name, compressors in _V3_COMPRESSORS.items():
        meta = array_metadata(shape=SHAPE, dtype="i4", chunks=SHAPE, compressors=compressors)
        chains[f"v3-{name}"] = (CodecChain.from_metadata(meta), data)
    meta = array_metadata(
        shape=SHAPE,
        dtype="i4",
        chunks=SHAPE,
        compressors=None,
        filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
    )
    chains["v3-transpose"] = (CodecChain.from_metadata(meta), data)
    meta = array_metadata(shape=(32, 32), dtype="i4", chunks=(8, 8), shards=(32, 32))
    chains["v3-sharding"] = (CodecChain.from_metadata(meta), np.arange(1024, dtype="<i4"))
    strings = np.array(["a", "bb", "", "dddd"] * 64, dtype=object).reshape(SHAPE)
    meta = array_metadata(shape=SHAPE, dtype=np.dtypes.StringDType(), chunks=SHAPE)
    chains["v3-vlen-utf8"] = (CodecChain.from_metadata(meta), strings)
    for cid in _V2_COMPRESSORS:
        meta = array_metadata(
            shape=SHAPE, dtype="i4", chunks=SHAPE, zarr_format=2, compressors=[{"id": cid}]
        )
        chains[f"v2-{cid}"] = (CodecChain.from_metadata(meta), data)
    meta = array_metadata(
        shape=SHAPE,
        dtype="i4",
        chunks=SHAPE,
        zarr_format=2,
        filters=[{"id": "delta", "dtype": "<i4"}],
        compressors=[{"id": "zlib"}],
    )
    chains["v2-delta-zlib"] = (CodecChain.from_metadata(meta), data)
    return chains


CHAINS = _chains()
ENCODED = {
    name: bytes(chain.encode(value.reshape(chain.spec.shape)))
    for name, (chain, value) in CHAINS.items()
}


@st.composite
def corrupted(draw: st.DrawFn) -> tuple[str, bytes]:
    """A chain name and a damaged copy of one of its encoded chunks."""
    name = draw(st.sampled_from(sorted(CHAINS)))
    data = bytearray(ENCODED[name])
    kind = draw(st.sampled_from(["flip", "truncate", "random", "append", "splice"]))
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
    elif kind == "truncate":
        del data[draw(st.integers(0, len(data) - 1)) :]
    elif kind == "random":
        data = bytearray(draw(st.binary(max_size=4096)))
    elif kind == "append":
        data += draw(st.binary(min_size=1, max_size=64))
    else:  # overwrite a run of bytes (headers, lengths, offsets)
        start = draw(st.integers(0, len(data) - 1))
        data[start : start + 8] = draw(st.binary(min_size=1, max_size=8))
    return name, bytes(data)


def check_decode(name: str, data: bytes) -> None:
    """Decode and decode_into: a chunk of the right shape or an aiozarr error."""
    chain, _ = CHAINS[name]
    try:
        chunk = chain.decode(data, "c/0")
        assert chunk.shape == chain.spec.shape
    except AiozarrError:
        pass
    out = np.empty(chain.spec.shape, dtype=chain.spec.dtype)
    with contextlib.suppress(AiozarrError):
        chain.decode_into(data, out, "c/0")


def _fuzz_test(examples: int) -> Callable[..., None]:
    @fuzz_settings(examples)
    @given(case=corrupted())
    def test(case: tuple[str, bytes]) -> None:
        check_decode(*case)

    return test


test_fuzz_corrupt_chunks = _fuzz_test(FUZZ_EXAMPLES)
test_fuzz_corrupt_chunks_full = pytest.mark.slow(_fuzz_test(FULL_EXAMPLES))


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_valid_chunks_round_trip(name: str) -> None:
    # The fuzzing mutates real chunks: each must decode as it was written.
    chain, value = CHAINS[name]
    np.testing.assert_array_equal(chain.decode(ENCODED[name]), value.reshape(chain.spec.shape))


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_short_frame_is_refused_not_padded(name: str) -> None:
    # A valid chunk of half the size must not decode as a full chunk padded with zeros.
    chain, value = CHAINS[name]
    if name == "v3-sharding":
        pytest.skip("a shard's index fixes each inner chunk's place")
    flat = value.reshape(-1)
    half_meta = array_metadata(
        shape=(flat.size // 2,),
        dtype=chain.spec.dtype,
        chunks=(flat.size // 2,),
        **_options_of(name),
    )
    half = CodecChain.from_metadata(half_meta).encode(flat[: flat.size // 2])
    with pytest.raises(AiozarrError):
        chain.decode(half, "c/0")
    out = np.empty(chain.spec.shape, dtype=chain.spec.dtype)
    with pytest.raises(AiozarrError):
        chain.decode_into(half, out, "c/0")


def _options_of(name: str) -> dict[str, Any]:
    fmt, _, codec = name.partition("-")
    if fmt == "v2":
        if codec == "delta-zlib":
            return {
                "zarr_format": 2,
                "filters": [{"id": "delta", "dtype": "<i4"}],
                "compressors": [{"id": "zlib"}],
            }
        return {"zarr_format": 2, "compressors": [{"id": codec}]}
    if codec in ("transpose", "vlen-utf8"):
        return {"compressors": None}
    return {"compressors": _V3_COMPRESSORS[codec]}


BOMB_BYTES = 64 << 20
CHUNK = 4096  # the decoded size the chain expects


def _bombs() -> dict[str, tuple[CodecChain, bytes]]:
    zeros = np.zeros(BOMB_BYTES, dtype="u1")
    out: dict[str, tuple[CodecChain, bytes]] = {}
    for name in ("gzip", "zstd", "blosc"):
        big = CodecChain.from_metadata(
            array_metadata(
                shape=(BOMB_BYTES,),
                dtype="u1",
                chunks=(BOMB_BYTES,),
                compressors=_V3_COMPRESSORS[name],
            )
        )
        small = CodecChain.from_metadata(
            array_metadata(
                shape=(CHUNK,), dtype="u1", chunks=(CHUNK,), compressors=_V3_COMPRESSORS[name]
            )
        )
        out[f"v3-{name}"] = (small, bytes(big.encode(zeros)))
    for cid in _V2_COMPRESSORS:
        small = CodecChain.from_metadata(
            array_metadata(
                shape=(CHUNK,),
                dtype="u1",
                chunks=(CHUNK,),
                zarr_format=2,
                compressors=[{"id": cid}],
            )
        )
        out[f"v2-{cid}"] = (small, bytes(numcodecs.get_codec({"id": cid}).encode(zeros)))
    return out


@pytest.fixture(scope="module")
def bombs() -> dict[str, tuple[CodecChain, bytes]]:
    return _bombs()


@pytest.mark.parametrize(
    "name", [f"v3-{n}" for n in ("gzip", "zstd", "blosc")] + [f"v2-{c}" for c in _V2_COMPRESSORS]
)
@pytest.mark.parametrize("into", [False, True])
def test_decompression_bomb_allocates_no_more_than_the_chunk(
    bombs: dict[str, tuple[CodecChain, bytes]], name: str, into: bool
) -> None:
    chain, bomb = bombs[name]
    # Beyond the chunk, a copy of the input and a fixed working set may be allocated;
    # lzma's decoder keeps its dictionary (8 MiB at the default preset), which does not
    # grow with what the bomb claims.
    allowed = CHUNK + len(bomb) + (1 << 20) + ((9 << 20) if name == "v2-lzma" else 0)
    out = np.empty(CHUNK, dtype="u1")
    tracemalloc.start()
    try:
        with pytest.raises(CodecError):
            if into:
                chain.decode_into(bomb, out, "bomb/0")
            else:
                chain.decode(bomb, "bomb/0")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < allowed, f"{name}: {peak} bytes allocated for a {CHUNK}-byte chunk"
    assert peak < BOMB_BYTES // 4
