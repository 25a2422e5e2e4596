"""Writer quirks seen in the wild: read leniently with an `AiozarrWarning`, never silently wrong.

Each fixture is written here byte for byte, as the quirky writer left it.
"""

from __future__ import annotations

import gzip
import json
import warnings
import zlib
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

import aiozarr
from aiozarr.errors import AiozarrWarning, CodecError, MetadataError

DATA = np.arange(20, dtype="<f8")


def write_v3(root: Path, codecs: list[Any], chunks: list[bytes], dtype: str = "float64") -> None:
    """A 1-d v3 array of 20 items in chunks of 10, with `codecs` and the given chunk bytes."""
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [20],
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0 if dtype != "string" else "",
        "codecs": codecs,
        "attributes": {},
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "zarr.json").write_text(json.dumps(doc))
    for i, chunk in enumerate(chunks):
        (root / "c").mkdir(exist_ok=True)
        (root / "c" / str(i)).write_bytes(chunk)


def write_v2(root: Path, compressor: dict[str, Any], chunks: list[bytes]) -> None:
    """A 1-d v2 float64 array of 20 items in chunks of 10, with `compressor`."""
    doc = {
        "zarr_format": 2,
        "shape": [20],
        "chunks": [10],
        "dtype": "<f8",
        "compressor": compressor,
        "fill_value": 0.0,
        "order": "C",
        "filters": None,
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / ".zarray").write_text(json.dumps(doc))
    for i, chunk in enumerate(chunks):
        (root / str(i)).write_bytes(chunk)


def halves(data: np.ndarray = DATA) -> list[bytes]:
    return [data[:10].tobytes(), data[10:].tobytes()]


def read(root: Path) -> tuple[np.ndarray, list[str]]:
    """The whole array at `root`, and the messages of the AiozarrWarnings raised reading it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = aiozarr.open_array(str(root))[...]
    assert all(issubclass(w.category, AiozarrWarning) for w in caught), caught
    return values, [str(w.message) for w in caught]


# (a) an empty codec list


def test_empty_codecs_multibyte_reads_as_little_endian_bytes(tmp_path: Path) -> None:
    write_v3(tmp_path, [], halves())
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, DATA)
    assert len(messages) == 1
    assert "zarr.json" in messages[0] and '"codecs"' in messages[0]
    assert "empty" in messages[0] and '"endian": "little"' in messages[0]


def test_empty_codecs_one_byte_type(tmp_path: Path) -> None:
    data = np.arange(20, dtype="u1")
    write_v3(tmp_path, [], halves(data), dtype="uint8")
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, data)
    assert len(messages) == 1 and "endian" not in messages[0]


def test_empty_codecs_with_compressed_chunks_is_an_error(tmp_path: Path) -> None:
    # The chunks were compressed after all: their size gives it away, nothing is guessed.
    write_v3(tmp_path, [], [zlib.compress(c) for c in halves()])
    with pytest.warns(AiozarrWarning), pytest.raises(CodecError, match="expected 80"):
        aiozarr.open_array(str(tmp_path))[...]


def test_empty_codecs_for_variable_length_data_is_an_error(tmp_path: Path) -> None:
    write_v3(tmp_path, [], [], dtype="string")
    with pytest.raises(MetadataError, match='"codecs" is empty'):
        aiozarr.open_array(str(tmp_path))


def test_codecs_must_still_be_a_list(tmp_path: Path) -> None:
    write_v3(tmp_path, {"name": "bytes"}, [])  # type: ignore[arg-type]
    with pytest.raises(MetadataError, match="codecs"):
        aiozarr.open_array(str(tmp_path))


# (b) blosc `shuffle` of the wrong kind


def blosc_chunks(shuffle: int) -> list[bytes]:
    codec = numcodecs.Blosc("lz4", 5, shuffle)
    return [codec.encode(c) for c in halves()]


def test_v3_blosc_shuffle_as_integer(tmp_path: Path) -> None:
    config = {"cname": "lz4", "clevel": 5, "shuffle": 2, "typesize": 8, "blocksize": 0}
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    write_v3(tmp_path, [*codecs, {"name": "blosc", "configuration": config}], blosc_chunks(2))
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, DATA)
    assert len(messages) == 1
    assert "zarr.json" in messages[0] and "'shuffle'" in messages[0]
    assert "'bitshuffle'" in messages[0]


def test_v3_blosc_shuffle_unknown_integer_is_an_error(tmp_path: Path) -> None:
    config = {"cname": "lz4", "clevel": 5, "shuffle": 7, "blocksize": 0}
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    write_v3(tmp_path, [*codecs, {"name": "blosc", "configuration": config}], [])
    with pytest.raises(MetadataError, match="shuffle"):
        aiozarr.open_array(str(tmp_path))[...]


@pytest.mark.parametrize(("name", "number"), [("noshuffle", 0), ("shuffle", 1), ("bitshuffle", 2)])
def test_v2_blosc_shuffle_as_string(tmp_path: Path, name: str, number: int) -> None:
    compressor = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": name, "blocksize": 0}
    write_v2(tmp_path, compressor, blosc_chunks(number))
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, DATA)
    assert len(messages) == 1
    assert ".zarray" in messages[0] and "'shuffle'" in messages[0] and repr(name) in messages[0]


@pytest.mark.parametrize(("name", "number"), [("NONE", 0), ("BYTE", 1), ("BIT", 2)])
def test_gdal_blosc_shuffle_names(tmp_path: Path, name: str, number: int) -> None:
    # GDAL's BLOSC_SHUFFLE spelling, in a v2 compressor and in a v3 blosc codec.
    compressor = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": name, "blocksize": 0}
    write_v2(tmp_path / "v2", compressor, blosc_chunks(number))
    config = {"cname": "lz4", "clevel": 5, "shuffle": name, "typesize": 8, "blocksize": 0}
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    write_v3(
        tmp_path / "v3", [*codecs, {"name": "blosc", "configuration": config}], blosc_chunks(number)
    )
    for root, key in ((tmp_path / "v2", ".zarray"), (tmp_path / "v3", "zarr.json")):
        values, messages = read(root)
        np.testing.assert_array_equal(values, DATA)
        assert len(messages) == 1
        assert key in messages[0] and "'shuffle'" in messages[0] and repr(name) in messages[0]


def test_v2_blosc_shuffle_unknown_string_is_an_error(tmp_path: Path) -> None:
    compressor = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": "bytes", "blocksize": 0}
    write_v2(tmp_path, compressor, blosc_chunks(1))
    with pytest.raises(MetadataError, match="compressor"):
        aiozarr.open_array(str(tmp_path))[...]


# (c) extra keys inside compressor configurations


def test_v2_compressor_with_unknown_keys(tmp_path: Path) -> None:
    compressor = {"id": "zlib", "level": 1, "written_by": "tool 0.1", "checksum": True}
    write_v2(tmp_path, compressor, [zlib.compress(c) for c in halves()])
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, DATA)
    assert len(messages) == 1
    assert ".zarray" in messages[0] and "'checksum'" in messages[0]
    assert "'written_by'" in messages[0]


def test_v3_compressor_with_unknown_fields(tmp_path: Path) -> None:
    codecs = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "gzip", "configuration": {"level": 1, "mtime": 0}},
    ]
    write_v3(tmp_path, codecs, [gzip.compress(c) for c in halves()])
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, DATA)
    assert len(messages) == 1
    assert "zarr.json" in messages[0] and "'gzip'" in messages[0] and "'mtime'" in messages[0]


def test_v3_unknown_field_of_a_layout_codec_is_an_error(tmp_path: Path) -> None:
    # An unknown field of `bytes` could change how the bytes are laid out: not guessed.
    codecs = [{"name": "bytes", "configuration": {"endian": "little", "order": "F"}}]
    write_v3(tmp_path, codecs, halves())
    with pytest.raises(MetadataError, match="order"):
        aiozarr.open_array(str(tmp_path))[...]


# (d) a gzip-declared chunk that is a zlib stream


def test_v3_gzip_chunk_holding_zlib(tmp_path: Path) -> None:
    codecs = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "gzip", "configuration": {"level": 1}},
    ]
    first, second = halves()
    write_v3(tmp_path, codecs, [zlib.compress(first), gzip.compress(second)])
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, DATA)
    assert len(messages) == 1
    assert "c/0" in messages[0] and "zlib" in messages[0] and "'gzip'" in messages[0]


def test_v2_gzip_chunk_holding_zlib(tmp_path: Path) -> None:
    write_v2(tmp_path, {"id": "gzip", "level": 1}, [zlib.compress(c) for c in halves()])
    values, messages = read(tmp_path)
    np.testing.assert_array_equal(values, DATA)
    assert len(messages) == 1  # once per array, not once per chunk
    assert "zlib" in messages[0] and ("'0'" in messages[0] or "'1'" in messages[0])


def test_gzip_chunk_holding_corrupt_zlib_is_an_error(tmp_path: Path) -> None:
    stream = bytearray(zlib.compress(halves()[0]))
    stream[-1] ^= 0xFF  # break the adler32 checksum
    write_v2(tmp_path, {"id": "gzip", "level": 1}, [bytes(stream), gzip.compress(halves()[1])])
    with pytest.raises(CodecError, match="gzip"):
        aiozarr.open_array(str(tmp_path))[...]


def test_gzip_chunk_holding_other_data_is_an_error(tmp_path: Path) -> None:
    codecs = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "gzip", "configuration": {"level": 1}},
    ]
    write_v3(tmp_path, codecs, [b"\x00" * 20, gzip.compress(halves()[1])])
    with pytest.raises(CodecError, match="c/0"):
        aiozarr.open_array(str(tmp_path))[...]
