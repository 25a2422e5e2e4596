"""Each codec on its own: round trips, configuration checks, corrupt input, bounded output."""

from __future__ import annotations

import gzip
import zlib

import numcodecs
import numpy as np
import pytest

from aiozarr.codecs import (
    BytesToBytesCodec,
    ChunkSpec,
    CodecChain,
    ShardingCodec,
    get_codec,
    register_codec,
    registered_codecs,
)
from aiozarr.codecs.blosc import BloscCodec
from aiozarr.codecs.bytes import BytesCodec
from aiozarr.codecs.crc32c import Crc32cCodec
from aiozarr.codecs.gzip import GzipCodec
from aiozarr.codecs.transpose import TransposeCodec
from aiozarr.codecs.vlen import VlenBytesCodec, VlenUtf8Codec
from aiozarr.codecs.zstd import ZstdCodec
from aiozarr.errors import (
    AiozarrWarning,
    ChecksumError,
    CodecError,
    MetadataError,
    UnsupportedError,
)
from aiozarr.metadata.model import CodecMetadata

SPEC = ChunkSpec((16, 8), np.dtype("<i4"), 0)
DATA = np.arange(128, dtype="<i4").reshape(16, 8)
RAW = DATA.tobytes()

COMPRESSORS = [
    GzipCodec(level=5),
    ZstdCodec(level=3, checksum=True),
    BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=4),
    BloscCodec(cname="zstd", clevel=1, shuffle="bitshuffle"),
    BloscCodec(cname="zlib", clevel=9, shuffle="noshuffle"),
]


def test_builtin_codecs_are_registered() -> None:
    """Importing `aiozarr.codecs` registers each built-in class under its own name (the
    table in `codecs/builtin.py`; the codec modules do not import the registry)."""
    builtin = {
        "blosc": BloscCodec,
        "bytes": BytesCodec,
        "crc32c": Crc32cCodec,
        "gzip": GzipCodec,
        "transpose": TransposeCodec,
        "vlen-utf8": VlenUtf8Codec,
        "vlen-bytes": VlenBytesCodec,
        "zstd": ZstdCodec,
        "sharding_indexed": ShardingCodec,
    }
    table = registered_codecs()
    assert {name: table.get(name) for name in builtin} == builtin


@pytest.mark.parametrize("endian", ["little", "big"])
def test_bytes_round_trip_and_layout(endian: str) -> None:
    codec = BytesCodec(endian=endian)  # type: ignore[arg-type]
    encoded = bytes(codec.encode(DATA, SPEC))
    assert encoded == DATA.astype("<i4" if endian == "little" else ">i4").tobytes()
    decoded = codec.decode(encoded, SPEC)
    assert decoded.dtype == SPEC.dtype
    np.testing.assert_array_equal(decoded, DATA)


def test_bytes_encodes_non_contiguous_input_in_c_order() -> None:
    spec = ChunkSpec((8, 16), np.dtype("<i4"), 0)
    codec = BytesCodec(endian="little")
    assert bytes(codec.encode(DATA.T, spec)) == np.ascontiguousarray(DATA.T).tobytes()


def test_bytes_structured_and_strings_round_trip() -> None:
    dtype = np.dtype([("a", "<i2"), ("b", "<f8")])
    spec = ChunkSpec((3,), dtype, np.zeros((), dtype)[()])
    values = np.array([(1, 1.5), (2, -2.0), (3, 0.25)], dtype=dtype)
    big = BytesCodec(endian="big")
    np.testing.assert_array_equal(big.decode(big.encode(values, spec), spec), values)
    spec_s = ChunkSpec((2,), np.dtype("S3"), b"")
    plain = BytesCodec()
    assert list(plain.decode(plain.encode(np.array([b"ab", b"xyz"]), spec_s), spec_s)) == [
        b"ab",
        b"xyz",
    ]


def test_bytes_without_endian_for_multi_byte_numbers_is_little_endian() -> None:
    # the spec requires it: read as zarr-python 3.1 reads it, with a warning
    with pytest.warns(AiozarrWarning, match="'endian' is missing"):
        BytesCodec().validate(SPEC)
    assert BytesCodec().encode(DATA, SPEC) == BytesCodec(endian="little").encode(DATA, SPEC)
    # a new array's codec is stored complete
    assert BytesCodec.completed_config({}, np.dtype("i4")) == {"endian": "little"}
    assert BytesCodec.completed_config({"endian": "big"}, np.dtype("i4")) == {"endian": "big"}
    assert BytesCodec.completed_config({}, np.dtype("u1")) == {}
    BytesCodec().validate(ChunkSpec((4,), np.dtype("u1"), 0))  # one byte: no endian needed
    with pytest.raises(MetadataError, match="endian"):
        get_codec(CodecMetadata("bytes", {"endian": "middle"}), "arr/zarr.json")


def test_bytes_wrong_size_is_codec_error() -> None:
    with pytest.raises(CodecError, match="expected 512"):
        BytesCodec(endian="little").decode(RAW[:-4], SPEC)


def test_transpose_round_trip_and_validation() -> None:
    spec = ChunkSpec((2, 3, 4), np.dtype("f8"), 0.0)
    codec = TransposeCodec(order=[2, 0, 1])
    values = np.arange(24, dtype="f8").reshape(2, 3, 4)
    encoded = codec.encode(values, spec)
    assert encoded.shape == (4, 2, 3) == codec.resolve(spec).shape
    np.testing.assert_array_equal(codec.decode(encoded, spec), values)
    with pytest.raises(MetadataError, match="permutation"):
        TransposeCodec(order=[0, 0, 1])
    with pytest.raises(MetadataError, match="dimensions"):
        TransposeCodec(order=[1, 0]).validate(spec)


@pytest.mark.parametrize("codec", COMPRESSORS, ids=repr)
def test_compressor_round_trip(codec: BytesToBytesCodec) -> None:
    encoded = codec.encode(RAW, SPEC)
    assert len(encoded) < len(RAW)
    assert bytes(codec.decode(encoded, SPEC)) == RAW
    assert bytes(codec.decode_sized(encoded, SPEC, len(RAW))) == RAW


@pytest.mark.parametrize("codec", COMPRESSORS, ids=repr)
def test_corrupt_and_truncated_input_is_codec_error(codec: BytesToBytesCodec) -> None:
    encoded = bytes(codec.encode(RAW, SPEC))
    chain = CodecChain((), BytesCodec(endian="little"), (codec,), SPEC)
    for bad in (encoded[: len(encoded) // 2], b"\x00" * 40, encoded[:3]):
        with pytest.raises(CodecError, match="data/c/1/2"):
            chain.decode(bad, "data/c/1/2")


@pytest.mark.parametrize("codec", COMPRESSORS, ids=repr)
def test_output_larger_than_expected_is_refused(codec: BytesToBytesCodec) -> None:
    encoded = codec.encode(RAW * 4, SPEC)
    with pytest.raises(CodecError):
        codec.decode_sized(encoded, SPEC, len(RAW))


def test_gzip_bomb_is_bounded() -> None:
    # 1 GiB of zeros compresses to ~1 MiB; decoding must stop just past the expected size.
    bomb = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    stream = bomb.compress(b"\x00" * (1 << 20)) + b"".join(
        bomb.compress(b"\x00" * (1 << 20)) for _ in range(63)
    )
    stream += bomb.flush()
    with pytest.raises(CodecError, match="more than 512 bytes"):
        GzipCodec().decode_sized(stream, SPEC, 512)


def test_gzip_matches_numcodecs_and_reads_multi_member() -> None:
    codec = GzipCodec(level=6)
    ours = bytes(codec.encode(RAW, SPEC))
    theirs = numcodecs.GZip(level=6).encode(RAW)
    # Same deflate stream and trailer; headers differ in mtime (ours is 0: reproducible).
    assert ours[10:] == theirs[10:]
    assert ours[4:8] == b"\x00\x00\x00\x00"
    assert numcodecs.GZip().decode(ours) == RAW
    two = gzip.compress(RAW[:100]) + gzip.compress(RAW[100:])
    assert codec.decode_sized(two, SPEC, len(RAW)) == RAW


def test_gzip_holding_zlib_warns_naming_the_key_it_is_handed() -> None:
    # The key travels in the spec: decoding on any thread names the right chunk.
    codec = GzipCodec()
    with pytest.warns(AiozarrWarning, match=r"chunk 'a/c/1/2'.*zlib"):
        assert codec.decode_sized(zlib.compress(RAW), SPEC.named("a/c/1/2"), len(RAW)) == RAW
    assert SPEC.named("a/c/1/2") == SPEC  # the key is not part of what a chunk is


@pytest.mark.parametrize("level", [-5, 0, 3, 19])
@pytest.mark.parametrize("checksum", [False, True])
def test_zstd_writes_numcodecs_frames_byte_for_byte(level: int, checksum: bool) -> None:
    # Several chunks through one thread's reused context, as a write runs them.
    rng = np.random.default_rng(level + 30)
    chunks = [RAW, b"", rng.integers(0, 8, 50_000, dtype="u1").tobytes(), RAW[::-1]]
    codec = ZstdCodec(level=level, checksum=checksum)
    reference = numcodecs.Zstd(level=level, checksum=checksum)
    for chunk in chunks:
        assert bytes(codec.encode(chunk, SPEC)) == bytes(reference.encode(chunk))


def test_gzip_and_zstd_level_validation() -> None:
    with pytest.raises(MetadataError, match="level"):
        get_codec(CodecMetadata("gzip", {"level": 12}), "a/zarr.json")
    with pytest.raises(MetadataError, match="checksum"):
        get_codec(CodecMetadata("zstd", {"level": 1, "checksum": "yes"}), "a/zarr.json")


def test_blosc_configuration_validation() -> None:
    with pytest.raises(MetadataError, match="cname"):
        get_codec(CodecMetadata("blosc", {"cname": "brotli"}), "a/zarr.json")
    with pytest.raises(MetadataError, match="shuffle"):
        get_codec(CodecMetadata("blosc", {"cname": "lz4", "shuffle": 7}), "a/zarr.json")
    with pytest.warns(AiozarrWarning, match="a/zarr.json: codec 'blosc': field 'shuffle'"):
        codec = get_codec(CodecMetadata("blosc", {"cname": "lz4", "shuffle": 1}), "a/zarr.json")
    assert codec.configuration()["shuffle"] == "shuffle"  # numcodecs' integer: a writer quirk


def test_crc32c_appends_little_endian_checksum() -> None:
    import google_crc32c

    codec = Crc32cCodec()
    encoded = bytes(codec.encode(RAW, SPEC))
    assert encoded[:-4] == RAW
    assert encoded[-4:] == google_crc32c.value(RAW).to_bytes(4, "little")
    assert codec.encoded_size(len(RAW)) == len(encoded)
    assert bytes(codec.decode(encoded, SPEC)) == RAW


def test_crc32c_mismatch_names_the_key() -> None:
    chain = CodecChain((), BytesCodec(endian="little"), (Crc32cCodec(),), SPEC)
    encoded = bytearray(chain.encode(DATA))
    encoded[10] ^= 0xFF
    with pytest.raises(ChecksumError, match="arr/c/0/0"):
        chain.decode(bytes(encoded), "arr/c/0/0")
    with pytest.raises(CodecError, match="too short"):
        chain.decode(b"\x01\x02", "arr/c/0/0")


def test_vlen_utf8_round_trip_matches_numcodecs() -> None:
    spec = ChunkSpec((2, 2), np.dtype(object), "")
    values = np.array([["a", "héllo"], ["", "wörld!"]], dtype=object)
    codec = VlenUtf8Codec()
    encoded = codec.encode(values, spec)
    assert encoded == numcodecs.VLenUTF8().encode(values.ravel())
    np.testing.assert_array_equal(codec.decode(encoded, spec), values)
    with pytest.raises(CodecError, match="items"):
        codec.decode(encoded, ChunkSpec((5,), np.dtype(object), ""))
    with pytest.raises(CodecError):
        codec.decode(encoded[:-3], spec)


def test_vlen_bytes_round_trip() -> None:
    spec = ChunkSpec((3,), np.dtype(object), b"")
    values = np.array([b"", b"\x00\xff", b"abc"], dtype=object)
    codec = VlenBytesCodec()
    np.testing.assert_array_equal(codec.decode(codec.encode(values, spec), spec), values)
    with pytest.raises(MetadataError):
        codec.validate(ChunkSpec((3,), np.dtype("i4"), 0))


def test_unknown_codec_names_codec_and_key() -> None:
    with pytest.raises(UnsupportedError, match=r"a/b/zarr\.json.*'lzma9000'"):
        get_codec(CodecMetadata("lzma9000"), "a/b/zarr.json")


def test_bad_configuration_names_key_codec_and_field() -> None:
    with pytest.raises(MetadataError, match=r"x/zarr\.json.*'bytes'.*lvl"):
        get_codec(CodecMetadata("bytes", {"lvl": 1}), "x/zarr.json")
    # A compressor's unknown field cannot change what decodes: a writer quirk, warned.
    with pytest.warns(AiozarrWarning, match=r"x/zarr\.json: codec 'gzip': unknown .*'lvl'"):
        get_codec(CodecMetadata("gzip", {"lvl": 1}), "x/zarr.json")
    with pytest.raises(MetadataError, match=r"x/zarr\.json.*'transpose'.*order"):
        get_codec(CodecMetadata("transpose", {"order": "K"}), "x/zarr.json")  # "C"/"F": quirks


def test_third_party_codec_registration() -> None:
    class XorCodec(BytesToBytesCodec):
        name = "test-xor"

        def __init__(self, key: int = 0x5A) -> None:
            self.key = key

        def configuration(self) -> dict[str, int]:
            return {"key": self.key}

        def encode(self, data: object, spec: ChunkSpec) -> bytes:
            return (np.frombuffer(data, np.uint8) ^ self.key).tobytes()  # type: ignore[call-overload]

        def decode(self, data: object, spec: ChunkSpec) -> bytes:
            return self.encode(data, spec)

    register_codec(XorCodec)
    chain = CodecChain.from_codecs(
        [CodecMetadata("bytes", {"endian": "little"}), CodecMetadata("test-xor", {"key": 7})],
        SPEC,
    )
    encoded = chain.encode(DATA)
    assert bytes(encoded) != RAW
    np.testing.assert_array_equal(chain.decode(encoded), DATA)
