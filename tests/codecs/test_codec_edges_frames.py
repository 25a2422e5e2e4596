"""Chunks other writers store that aiozarr refused: several zstd frames that each record
their size (pzstd, concatenated files), and a gzip member followed by zero padding."""

from __future__ import annotations

import gzip
import json

import numcodecs
import numpy as np
import pytest
import zstandard

import aiozarr

zarr = pytest.importorskip("zarr")

VALUES = np.arange(64, dtype="<i4")


def _array(root, codec: dict, chunk: bytes) -> str:
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": [64], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "attributes": {},
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, codec],
    }  # fmt: skip
    (root / "c").mkdir(parents=True)
    (root / "zarr.json").write_text(json.dumps(doc))
    (root / "c" / "0").write_bytes(chunk)
    return str(root)


def _read_as_zarr_python(path: str) -> None:
    expected = zarr.open_array(path, mode="r")[...]
    np.testing.assert_array_equal(expected, VALUES)
    np.testing.assert_array_equal(aiozarr.open_array(path)[...], expected)


def test_zstd_frames_that_each_record_their_size_are_read(tmp_path):
    raw = VALUES.tobytes()
    c = zstandard.ZstdCompressor(write_content_size=True)
    chunk = c.compress(raw[:100]) + c.compress(raw[100:])  # the first records 100 of 256
    _read_as_zarr_python(
        _array(
            tmp_path / "a.zarr",
            {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
            chunk,
        )
    )


def test_a_zstd_first_frame_recording_more_than_the_chunk_is_refused(tmp_path):
    chunk = zstandard.ZstdCompressor(write_content_size=True).compress(VALUES.tobytes() * 2)
    path = _array(
        tmp_path / "a.zarr",
        {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
        chunk,
    )
    with pytest.raises(aiozarr.errors.CodecError, match="expected 256"):
        aiozarr.open_array(path)[...]


def test_a_gzip_member_with_zero_padding_is_read(tmp_path):
    chunk = gzip.compress(VALUES.tobytes(), mtime=0) + b"\0" * 3
    _read_as_zarr_python(
        _array(tmp_path / "a.zarr", {"name": "gzip", "configuration": {"level": 5}}, chunk)
    )


@pytest.mark.parametrize("clevel", [0, 5])  # values it cannot compress lie in it as they are
def test_a_blosc_frame_with_bytes_put_into_it_is_refused(tmp_path, clevel):
    """Bytes put into a frame push its end past where its header says: data, not the
    zero padding some writers leave, follows it. Read, the values would be shifted."""
    codec = numcodecs.Blosc(cname="lz4", clevel=clevel, shuffle=numcodecs.Blosc.NOSHUFFLE)
    frame = codec.encode(VALUES.tobytes())
    middle = len(frame) // 2
    chunk = frame[:middle] + b"\x07" * 4 + frame[middle:]
    config = {"cname": "lz4", "clevel": clevel, "shuffle": "noshuffle", "typesize": 4}
    path = _array(tmp_path / "a.zarr", {"name": "blosc", "configuration": config}, chunk)
    with pytest.raises(aiozarr.errors.CodecError, match="'c/0': codec 'blosc': corrupt data"):
        aiozarr.open_array(path)[...]
    (tmp_path / "a.zarr" / "c" / "0").write_bytes(frame + bytes(16))  # z5py's padding
    np.testing.assert_array_equal(aiozarr.open_array(path)[...], VALUES)
