"""`CodecChain`: validation, decode/encode, the v2 numcodecs bridge, zarr-python interop."""

from __future__ import annotations

import bz2
import json
import lzma
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.codecs import ChunkSpec, CodecChain, layout_of
from aiozarr.codecs.bytes import BytesCodec
from aiozarr.codecs.gzip import GzipCodec
from aiozarr.codecs.numcodecs_v2 import NumcodecsV2Codec
from aiozarr.codecs.zstd import ZstdCodec
from aiozarr.errors import CodecError, MetadataError, UnsupportedError
from aiozarr.metadata.model import ArrayMetadata, CodecMetadata

SPEC = ChunkSpec((6, 4), np.dtype("<f8"), 0.0)
DATA = np.linspace(-3, 3, 24).reshape(6, 4)
LE = CodecMetadata("bytes", {"endian": "little"})


def v3_meta(codecs: list[CodecMetadata], shape: tuple[int, ...] = (6, 4)) -> ArrayMetadata:
    return ArrayMetadata(
        shape=shape, dtype=np.dtype("<f8"), chunk_shape=shape, fill_value=0.0, codecs=tuple(codecs)
    )


def v2_meta(
    dtype: str,
    shape: tuple[int, ...],
    compressor: dict[str, Any] | None = None,
    filters: list[dict[str, Any]] | None = None,
    order: str = "C",
) -> ArrayMetadata:
    return ArrayMetadata(
        shape=shape,
        dtype=np.dtype(dtype),
        chunk_shape=shape,
        fill_value=None,
        zarr_format=2,
        order=order,  # type: ignore[arg-type]
        filters=None if filters is None else tuple(filters),
        compressor=compressor,
    )


# --- validation ---------------------------------------------------------------------


def test_chain_needs_exactly_one_array_to_bytes_codec() -> None:
    with pytest.raises(MetadataError, match=r"a/zarr\.json.*exactly one array->bytes"):
        CodecChain.from_codecs([CodecMetadata("gzip", {"level": 1})], SPEC, "a/zarr.json")
    with pytest.raises(MetadataError, match="exactly one"):
        CodecChain.from_codecs([LE, CodecMetadata("bytes", {"endian": "big"})], SPEC, "k")
    with pytest.raises(MetadataError, match="empty"):
        CodecChain.from_metadata(v3_meta([]), "a/zarr.json")


def test_chain_order_is_checked() -> None:
    with pytest.raises(MetadataError, match=r"k/zarr\.json.*'gzip'.*before"):
        CodecChain.from_codecs([CodecMetadata("gzip", {"level": 1}), LE], SPEC, "k/zarr.json")
    with pytest.raises(MetadataError, match=r"'transpose'.*after"):
        CodecChain.from_codecs([LE, CodecMetadata("transpose", {"order": [1, 0]})], SPEC, "k")


def test_chain_validates_codecs_against_the_spec() -> None:
    strings = ChunkSpec((6, 4), np.dtype("O"), "")
    with pytest.raises(MetadataError, match=r"k/zarr\.json.*variable-length"):
        CodecChain.from_codecs([LE], strings, "k/zarr.json")
    with pytest.raises(UnsupportedError, match="'nope'"):
        CodecChain.from_codecs([LE, CodecMetadata("nope")], SPEC, "k/zarr.json")


# --- decode / encode ----------------------------------------------------------------


def test_decode_runs_codecs_in_reverse_and_spec_resolves_through_transpose() -> None:
    codecs = [CodecMetadata("transpose", {"order": [1, 0]}), LE, CodecMetadata("crc32c")]
    chain = CodecChain.from_metadata(v3_meta(codecs))
    encoded = chain.encode(DATA)
    assert chain.encoded_size() == len(encoded) == DATA.nbytes + 4
    assert bytes(encoded)[:-4] == DATA.T.tobytes()
    assert chain.spec.shape == (6, 4)
    np.testing.assert_array_equal(chain.decode(encoded), DATA)
    assert chain.to_metadata() == [c.to_json() for c in codecs]
    assert not chain.array_to_bytes.decodes_parts and layout_of(chain) is None


def test_library_errors_become_codec_errors_naming_the_key() -> None:
    chain = CodecChain((), BytesCodec(endian="little"), (GzipCodec(),), SPEC)
    with pytest.raises(CodecError, match="arr/c/0/1"):
        chain.decode(b"\x1f\x8b" + b"\x00" * 30, "arr/c/0/1")
    with pytest.raises(CodecError, match="arr/c/0/1"):
        chain.decode(GzipCodec().encode(b"x" * 10, SPEC), "arr/c/0/1")  # wrong size


@pytest.mark.parametrize(
    "codecs",
    [
        [LE],
        [CodecMetadata("bytes", {"endian": "big"})],
        [LE, CodecMetadata("zstd", {"level": 1, "checksum": False})],
        [LE, CodecMetadata("blosc", {"cname": "lz4", "clevel": 5, "shuffle": "shuffle"})],
        [CodecMetadata("transpose", {"order": [1, 0]}), LE, CodecMetadata("gzip", {"level": 1})],
    ],
    ids=lambda c: "+".join(x.name for x in c),
)
def test_decode_into_views(codecs: list[CodecMetadata]) -> None:
    chain = CodecChain.from_metadata(v3_meta(codecs))
    encoded = chain.encode(DATA)
    whole = np.full((6, 4), np.nan)
    chain.decode_into(encoded, whole, "k")
    np.testing.assert_array_equal(whole, DATA)
    big = np.full((10, 12), np.nan)
    chain.decode_into(encoded, big[2:8, 1:12:3], "k")  # strided view
    np.testing.assert_array_equal(big[2:8, 1:12:3], DATA)
    assert np.isnan(big[0]).all()
    with pytest.raises(CodecError, match="shape"):
        chain.decode_into(encoded, np.empty((4, 6)), "k")


def test_transient_decodes_reuse_one_buffer_per_thread() -> None:
    codecs = [CodecMetadata("bytes", {"endian": "little"}), CodecMetadata("zstd", {"level": 1})]
    chain = CodecChain.from_metadata(v3_meta(codecs))
    first = chain.decode_transient(chain.encode(DATA), "k")
    np.testing.assert_array_equal(first, DATA)
    second = chain.decode_transient(chain.encode(DATA + 1), "k")
    np.testing.assert_array_equal(second, DATA + 1)
    assert np.shares_memory(first, second)  # the same memory: no allocation per chunk
    with pytest.raises(CodecError, match="'k'"):
        chain.decode_transient(b"not zstd", "k")


# --- v2 numcodecs bridge ---------------------------------------------------------------

V2_CASES = [
    ("<i4", "C", {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}, None),
    ("<f8", "C", {"id": "zlib", "level": 1}, None),
    ("<i8", "C", None, [{"id": "delta", "dtype": "<i8"}]),
    (
        "<f8",
        "C",
        {"id": "zlib", "level": 1},
        [{"id": "fixedscaleoffset", "offset": 0, "scale": 10, "dtype": "<f8", "astype": "<i4"}],
    ),
    (">i4", "C", {"id": "gzip", "level": 1}, None),
    ("<u2", "F", {"id": "zstd", "level": 1}, None),
    (">f4", "F", None, None),
]


def _v2_values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    values = np.arange(int(np.prod(shape))).reshape(shape)
    return (values / 10 if dtype.endswith("f8") else values).astype(dtype)


@pytest.mark.parametrize(("dtype", "order", "compressor", "filters"), V2_CASES)
def test_v2_bridge_reads_and_writes_like_zarr_python(
    tmp_path: Path,
    dtype: str,
    order: str,
    compressor: dict[str, Any] | None,
    filters: list[dict[str, Any]] | None,
) -> None:
    shape = (5, 7)
    values = _v2_values(dtype, shape)
    theirs = zarr.create_array(
        store=str(tmp_path / "a"),
        shape=shape,
        chunks=shape,
        dtype=dtype,
        zarr_format=2,
        order=order,  # type: ignore[arg-type]
        compressors=None if compressor is None else numcodecs.get_codec(dict(compressor)),
        filters=[numcodecs.get_codec(dict(f)) for f in filters or []],
        fill_value=0,
    )
    theirs[...] = values
    stored = (tmp_path / "a" / "0.0").read_bytes()
    doc = json.loads((tmp_path / "a" / ".zarray").read_text())
    chain = CodecChain.from_metadata(
        v2_meta(doc["dtype"], shape, doc["compressor"], doc["filters"], doc["order"]), "a/0.0"
    )
    decoded = chain.decode(stored, "a/0.0")
    assert decoded.dtype == np.dtype(doc["dtype"])
    np.testing.assert_array_equal(decoded, values)
    # ...and zarr-python reads what we encode.
    (tmp_path / "a" / "0.0").write_bytes(bytes(chain.encode(values[::-1].copy())))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"))[...], values[::-1])


def test_v2_bridge_object_arrays(tmp_path: Path) -> None:
    values = np.array(["a", "", "héllo", "zarr"], dtype=object)
    meta = v2_meta("O", (4,), {"id": "zlib", "level": 1}, [{"id": "vlen-utf8"}])
    chain = CodecChain.from_metadata(meta, "s/0")
    np.testing.assert_array_equal(chain.decode(chain.encode(values)), values)
    with pytest.raises(MetadataError, match="object codec"):
        CodecChain.from_metadata(v2_meta("O", (4,), None, None), "s/.zarray")
    raw = np.array([b"", b"\x00\x01", b"abc"], dtype=object)
    chain = CodecChain.from_metadata(v2_meta("O", (3,), {"id": "zstd"}, [{"id": "vlen-bytes"}]))
    np.testing.assert_array_equal(chain.decode(chain.encode(raw)), raw)
    mixed = np.array([1, "two", [3, 4], None], dtype=object)
    chain = CodecChain.from_metadata(v2_meta("O", (4,), None, [{"id": "json2"}]))
    assert list(chain.decode(chain.encode(mixed))) == [1, "two", [3, 4], None]
    categorize = [{"id": "categorize", "labels": ["x", "y"], "dtype": "|O", "astype": "|u1"}]
    chain = CodecChain.from_metadata(v2_meta("O", (3,), None, categorize))
    cats = np.array(["y", "x", "y"], dtype=object)
    np.testing.assert_array_equal(chain.decode(chain.encode(cats)), cats)


@pytest.mark.parametrize("codec_id", ["json2", "msgpack2"])
def test_v2_shaped_object_codecs_in_f_order(codec_id: str) -> None:
    """json2 and msgpack2 store a chunk's items nested by row with its shape, whatever
    the array's order (numcodecs encodes `tolist()`), so an F-order chunk decodes to
    the rows it stores: they were read as if in F memory order, transposed."""
    if codec_id == "msgpack2":
        pytest.importorskip("msgpack")
    values = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    chain = CodecChain.from_metadata(v2_meta("O", (2, 3), None, [{"id": codec_id}], "F"))
    stored = numcodecs.get_codec({"id": codec_id}).encode(values)  # as zarr 2 wrote it
    assert chain.decode(stored, "a/0.0").tolist() == values.tolist()
    assert chain.decode(chain.encode(values), "a/0.0").tolist() == values.tolist()


def test_a_codec_library_error_on_encode_is_a_codec_error_naming_the_chunk(
    tmp_path: Path,
) -> None:
    """numcodecs' bitround takes no big-endian data: its `KeyError('>f8')` came out of a
    write as itself, naming neither the chunk nor what failed."""
    arr = aiozarr.create_array(
        tmp_path, shape=(6,), chunks=(3,), dtype=">f8", zarr_format=2,
        filters=[numcodecs.BitRound(5)], compressors=None,
    )  # fmt: skip
    with pytest.raises(CodecError, match=r"chunk '0'.*cannot encode.*KeyError"):
        arr[:3] = np.arange(3.0)


@pytest.mark.parametrize("codec_id", ["bz2", "lzma"])
def test_v2_streams_one_after_another_all_decode(codec_id: str) -> None:
    """A chunk of several bz2 or lzma streams (pbzip2, `cat a.xz b.xz`) decodes whole,
    as numcodecs decodes it (`bz2.decompress`): only the first stream was decoded,
    and the chunk refused as short. A broken stream after the first is still short."""
    compress = bz2.compress if codec_id == "bz2" else lzma.compress
    values = np.arange(1000, dtype="<i4")
    raw = values.tobytes()
    chain = CodecChain.from_metadata(v2_meta("<i4", (1000,), {"id": codec_id}))
    two = compress(raw[:1000]) + compress(raw[1000:])
    assert bytes(numcodecs.get_codec({"id": codec_id}).decode(two)) == raw
    np.testing.assert_array_equal(chain.decode(two, "a/0"), values)
    np.testing.assert_array_equal(chain.decode(two + bytes(4), "a/0"), values)  # xz padding
    second = compress(raw[1000:])
    broken = compress(raw[:1000]) + second[:8] + bytes(8) + second[16:]
    with pytest.raises(CodecError, match=r"'a/0'.*decompresses to"):
        chain.decode(broken, "a/0")


@pytest.mark.parametrize("scale", [0, 0.0, float("inf")])
def test_fixedscaleoffset_of_no_finite_scale_is_refused(scale: float) -> None:
    """A scale of 0 stores every value as 0 and reads it back as 0 / 0: NaN, INT_MIN in
    an int array, silently (numcodecs and zarr-python take it)."""
    fso = {"offset": 1, "scale": scale, "dtype": "<f8", "astype": "<i4"}
    with pytest.raises(MetadataError, match=r"a/\.zarray.*'scale' must be a finite number"):
        CodecChain.from_metadata(
            v2_meta("<f8", (4,), None, [{"id": "fixedscaleoffset", **fso}]), "a/.zarray"
        )
    codecs = [CodecMetadata("numcodecs.fixedscaleoffset", fso), CodecMetadata("bytes")]
    with pytest.raises(MetadataError, match=r"b/zarr\.json.*'scale' must be a finite number"):
        CodecChain.from_codecs(codecs, ChunkSpec((4,), np.dtype("<f8"), 0), "b/zarr.json")


def test_v2_bridge_structured_and_fixed_strings() -> None:
    dtype = np.dtype([("x", "<i4"), ("y", ">f8")])
    values = np.array([(1, 0.5), (2, 1.5), (3, -1.0)], dtype=dtype)
    chain = CodecChain.from_metadata(
        ArrayMetadata((3,), dtype, (3,), None, zarr_format=2, compressor={"id": "zlib"})
    )
    np.testing.assert_array_equal(chain.decode(chain.encode(values)), values)
    strings = np.array([b"ab", b"cde", b""], dtype="S3")
    chain = CodecChain.from_metadata(ArrayMetadata((3,), strings.dtype, (3,), b"", zarr_format=2))
    assert chain.encoded_size() == 9
    np.testing.assert_array_equal(chain.decode(chain.encode(strings)), strings)


def test_v2_bridge_refuses_pickle_and_unknown_codecs() -> None:
    with pytest.raises(UnsupportedError, match=r"pickle.*safety"):
        CodecChain.from_metadata(v2_meta("O", (2,), None, [{"id": "pickle"}]), "p/.zarray")
    with pytest.raises(UnsupportedError, match=r"p/\.zarray.*'no-such-codec'"):
        CodecChain.from_metadata(v2_meta("<i4", (2,), {"id": "no-such-codec"}), "p/.zarray")


def test_v2_bridge_truncated_blosc_is_codec_error() -> None:
    blosc = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
    chain = CodecChain.from_metadata(v2_meta("<i4", (100,), blosc), "b/0")
    encoded = bytes(chain.encode(np.arange(100, dtype="<i4")))
    with pytest.raises(CodecError, match="b/0"):
        chain.decode(encoded[:-8], "b/0")
    assert isinstance(chain.array_to_bytes, NumcodecsV2Codec)


# --- v3 interop with zarr-python (unsharded) ----------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "compressors", "order"),
    [
        ("<i2", zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"), "C"),
        ("<f8", zarr.codecs.ZstdCodec(level=3, checksum=True), "C"),
        (">u4", zarr.codecs.GzipCodec(level=4), "F"),
        ("<f4", [zarr.codecs.Crc32cCodec()], "C"),
        ("bool", zarr.codecs.BloscCodec(cname="zstd", clevel=1, shuffle="bitshuffle"), "C"),
    ],
)
def test_v3_chunks_interoperate_with_zarr_python(
    tmp_path: Path, dtype: str, compressors: Any, order: str
) -> None:
    shape = (6, 5)
    values = (np.arange(30).reshape(shape) % 7).astype(dtype)
    with zarr.config.set({"array.order": order}):
        theirs = zarr.create_array(
            store=str(tmp_path / "a"), shape=shape, chunks=shape, dtype=dtype,
            compressors=compressors, fill_value=0,
        )  # fmt: skip
    theirs[...] = values
    doc = json.loads((tmp_path / "a" / "zarr.json").read_text())
    codecs = tuple(CodecMetadata(c["name"], c.get("configuration", {})) for c in doc["codecs"])
    meta = ArrayMetadata(shape, np.dtype(dtype), shape, np.zeros((), dtype)[()], codecs=codecs)
    chain = CodecChain.from_metadata(meta, "a/c/0/0")
    chunk = tmp_path / "a" / "c" / "0" / "0"
    stored = chunk.read_bytes()
    np.testing.assert_array_equal(chain.decode(stored, "a/c/0/0"), values)
    ours = bytes(chain.encode(values))
    # Byte-exact, except that zarr-python stamps gzip headers with the time (we write 0).
    skip = 10 if stored[:2] == b"\x1f\x8b" else 0
    assert ours[skip:] == stored[skip:]
    chunk.write_bytes(bytes(chain.encode(values[::-1].copy())))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"))[...], values[::-1])


@pytest.mark.parametrize("dtype", [">f8", "<f8"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_decode_into_respects_byte_order(dtype: str, endian: str) -> None:
    spec = ChunkSpec((6, 4), np.dtype(dtype), 0.0)
    codecs = [CodecMetadata("bytes", {"endian": endian}), CodecMetadata("zstd", {"level": 1})]
    chain = CodecChain.from_codecs(codecs, spec, "k")
    out = np.empty((6, 4), dtype=dtype)
    chain.decode_into(chain.encode(DATA.astype(dtype)), out, "k")
    np.testing.assert_array_equal(out, DATA)


# --- one chain per chunk shape (rectilinear grids) ---------------------------------------


def test_for_shape_binds_the_same_codecs_to_another_shape_once() -> None:
    transpose = CodecMetadata("transpose", {"order": [1, 0]})
    chain = CodecChain.from_codecs([transpose, LE, CodecMetadata("gzip", {"level": 1})], SPEC, "k")
    assert chain.for_shape((6, 4)) is chain
    small = chain.for_shape((2, 3))
    assert small.spec == ChunkSpec((2, 3), SPEC.dtype, SPEC.fill_value)
    assert chain.for_shape((2, 3)) is small  # kept
    values = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(small.decode(small.encode(values)), values)
    with pytest.raises(CodecError, match=r"shape \(6, 4\)"):
        small.encode(DATA)
    with pytest.raises(CodecError, match="k/c/0/0"):  # a chunk of another shape
        small.decode(chain.encode(DATA), "k/c/0/0")


def test_for_shape_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import aiozarr.codecs.chain as chain_module

    monkeypatch.setattr(chain_module, "_MAX_SHAPES", 3)
    chain = CodecChain.from_codecs([LE], SPEC)
    first = chain.for_shape((1, 1))
    for n in range(2, 5):
        chain.for_shape((n, 1))
    assert chain.for_shape((1, 1)) is not first  # the cache started afresh
    assert chain.for_shape((1, 1)).spec.shape == (1, 1)


def test_a_compressor_that_decodes_into_a_buffer_writes_the_chunk_in_place() -> None:
    """A compressor declaring `decodes_into_buffer` is handed the output's own memory;
    one that does not (gzip) decodes to bytes that are then copied."""
    handed: list[int] = []

    class Watched(ZstdCodec):
        def decode_into_buffer(self, data: Any, out: Any) -> Any:
            handed.append(np.frombuffer(out, dtype=np.uint8).ctypes.data)
            return super().decode_into_buffer(data, out)

    for codec, in_place in ((Watched(), True), (GzipCodec(), False)):
        chain = CodecChain([], BytesCodec("little"), [codec], SPEC)
        out = np.zeros(SPEC.shape, SPEC.dtype)
        chain.decode_into(chain.encode(DATA), out)
        assert np.array_equal(out, DATA)
        assert handed == ([out.ctypes.data] if in_place else [])
        handed.clear()
