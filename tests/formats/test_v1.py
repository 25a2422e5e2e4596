"""Zarr v1 arrays: written here by following the v1 spec (`meta`, `attrs`, `0.0` chunks) as
zarr 1.x applied it, and read from `data/zarr_v1/`, written by zarr 1.1.0 itself
(make_zarr_v1_fixture.py), exactly as zarr 1.1.0 read it back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.errors import CodecError, MetadataError, UnsupportedError
from aiozarr.metadata import v1
from aiozarr.tools.migration import MigrateProgress, migrate

COMPRESSIONS: list[tuple[str | None, Any, Any]] = [
    # (compression, compression_opts, the numcodecs codec that writes the chunks)
    ("zlib", 1, numcodecs.Zlib(level=1)),
    ("zlib", None, numcodecs.Zlib(level=1)),
    ("bz2", 9, numcodecs.BZ2(level=9)),
    ("lzma", None, numcodecs.LZMA()),
    ("lzma", {"preset": 1, "format": 1, "check": -1, "filters": None}, numcodecs.LZMA(preset=1)),
    ("blosc", {"cname": "lz4", "clevel": 5, "shuffle": 1}, numcodecs.Blosc("lz4", 5, 1)),
    ("blosc", None, numcodecs.Blosc("blosclz", 5, 1)),
    ("none", None, None),
    (None, None, None),
]


def write_v1(
    root: Path,
    data: np.ndarray,
    chunks: tuple[int, ...],
    compression: str | None,
    opts: Any,
    codec: Any,
    *,
    order: str = "C",
    fill_value: Any = 0,
    attrs: dict[str, Any] | None = None,
    skip: tuple[tuple[int, ...], ...] = (),
) -> None:
    """A v1 array store as the spec describes it."""
    root.mkdir(parents=True, exist_ok=True)
    meta = {
        "zarr_format": 1,
        "shape": list(data.shape),
        "chunks": list(chunks),
        "dtype": [list(f) for f in data.dtype.descr] if data.dtype.names else data.dtype.str,
        "compression": compression,
        "compression_opts": opts,
        "fill_value": fill_value,
        "order": order,
    }
    (root / "meta").write_text(json.dumps(meta, indent=4, sort_keys=True))
    (root / "attrs").write_text(json.dumps(attrs or {}))
    grid = [range(-(-s // c)) for s, c in zip(data.shape, chunks, strict=True)]
    for coords in np.ndindex(*[len(g) for g in grid]):
        if coords in skip:
            continue
        block = np.full(chunks, fill_value if fill_value is not None else 0, dtype=data.dtype)
        sel = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunks, strict=True))
        part = data[sel]
        block[tuple(slice(0, n) for n in part.shape)] = part
        # zarr 1.x: only blosc compressed the chunk's memory (in `order`); the others
        # compressed array.tobytes(), C order.
        raw = block.tobytes(order=order if compression == "blosc" else "C")
        stored = raw if codec is None else codec.encode(raw)
        (root / ".".join(map(str, coords))).write_bytes(bytes(stored))


@pytest.mark.parametrize(("compression", "opts", "codec"), COMPRESSIONS)
def test_v1_compressions_read(tmp_path: Path, compression, opts, codec) -> None:
    data = np.arange(7 * 5, dtype="<i4").reshape(7, 5)
    write_v1(tmp_path, data, (3, 2), compression, opts, codec, attrs={"a": [1, 2]})
    arr = aiozarr.open_array(tmp_path, mode="r")
    assert arr.metadata.zarr_format == 1
    assert arr.attrs == {"a": [1, 2]}
    np.testing.assert_array_equal(arr[:], data)


def test_v1_fortran_order_big_endian_and_missing_chunks(tmp_path: Path) -> None:
    data = np.linspace(0, 1, 30).reshape(5, 6).astype(">f8")
    write_v1(
        tmp_path,
        data,
        (2, 4),
        "zlib",
        5,
        numcodecs.Zlib(5),
        order="F",
        fill_value="NaN",
        skip=((1, 1),),
    )
    arr = aiozarr.open_array(tmp_path, mode="r")
    expected = data.copy()
    expected[2:4, 4:6] = np.nan
    assert arr.dtype == np.dtype(">f8")
    np.testing.assert_array_equal(arr[:], expected)


def test_v1_structured_dtype(tmp_path: Path) -> None:
    dtype = np.dtype([("x", "<i2"), ("y", "<f4")])
    data = np.array([(1, 1.5), (2, 2.5), (3, 3.5)], dtype=dtype)
    write_v1(tmp_path, data, (2,), "zlib", 1, numcodecs.Zlib(1), fill_value=None)
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path, mode="r")[:], data)


def test_v1_metadata_is_read_only(tmp_path: Path) -> None:
    data = np.zeros(4, dtype="<u1")
    write_v1(tmp_path, data, (2,), "none", None, None)
    arr = aiozarr.open_array(tmp_path, mode="r+")
    with pytest.raises(MetadataError, match="migrate"):
        arr.update_attributes({"x": 1})


def test_v1_unknown_compression_is_named() -> None:
    doc = {
        "zarr_format": 1,
        "shape": [2],
        "chunks": [2],
        "dtype": "<i4",
        "compression": "snappy",
        "fill_value": 0,
        "order": "C",
    }
    with pytest.raises(UnsupportedError, match='"snappy"'):
        v1.parse_meta(json.dumps(doc), "meta")


def test_v1_bad_blosc_options_are_named() -> None:
    with pytest.raises(MetadataError, match="compression_opts"):
        v1.compressor_config("blosc", {"cname": "lz4"}, "meta")


FIXTURE = Path(__file__).parent / "data" / "zarr_v1"
EXPECTED = json.loads((FIXTURE.parent / "zarr_v1.expected.json").read_text())["arrays"]


def _expected(item: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(item["dtype"])
    values = item["values"]
    if dtype.kind == "c":
        values = [complex(*pair) for pair in values]
    elif dtype.kind == "S":
        values = [text.encode("latin-1") for text in values]
    elif dtype.kind == "f":
        values = [np.nan if v is None else v for v in values]
    return np.array(values, dtype=dtype).reshape(item["shape"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_zarr_1_output_reads_as_zarr_1_reads_it(name: str) -> None:
    item = EXPECTED[name]
    arr = aiozarr.open_array(FIXTURE / name, mode="r")
    values = arr[...]
    expected = _expected(item)
    assert values.dtype == expected.dtype
    np.testing.assert_array_equal(values, expected)
    if expected.dtype.kind not in "fc":
        assert values.tobytes() == expected.tobytes()
    assert arr.attrs == item["attrs"]
    # Partial reads of the same chunks agree with the whole.
    part = tuple(slice(1, None, 2) for _ in expected.shape)
    np.testing.assert_array_equal(arr[part], expected[part])


def test_zarr_1_fill_value_0_on_bytes_and_complex() -> None:
    assert aiozarr.open_array(FIXTURE / "bytes_fill_0", mode="r").fill_value == b"0"
    assert aiozarr.open_array(FIXTURE / "complex_fill_0", mode="r").fill_value == 0j
    doc = json.loads((FIXTURE / "complex_fill_0" / "meta").read_text())
    with pytest.raises(MetadataError, match="fill_value"):
        v1.parse_meta({**doc, "fill_value": "zero"}, "meta")


def test_zarr_1_blosc_zstd_needs_imagecodecs(monkeypatch: pytest.MonkeyPatch) -> None:
    # zarr 1.x's blosc used zstd 0.7, whose frames numcodecs' zstd no longer reads.
    monkeypatch.setitem(sys.modules, "imagecodecs", None)
    arr = aiozarr.open_array(FIXTURE / "blosc_zstd_bitshuffle", mode="r")
    with pytest.raises(CodecError, match=r"chunk '0\.0'.*zstd 0\.7.*imagecodecs"):
        arr[:7, :8]


def test_v1_blosc_fortran_order(tmp_path: Path) -> None:
    data = np.arange(4 * 5 * 6, dtype="<i8").reshape(4, 5, 6)
    codec = numcodecs.Blosc("lz4", 5, 1)
    write_v1(tmp_path, data, (3, 2, 4), "blosc", None, codec, order="F")
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path, mode="r")[...], data)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_1_blosc_zstd_migrates_to_frames_zarr_python_reads(
    tmp_path: Path, zarr_format: int
) -> None:
    name = "blosc_zstd_bitshuffle"
    seen: list[MigrateProgress] = []
    migrate(FIXTURE / name, tmp_path / "out", zarr_format=zarr_format, progress=seen.append)
    assert seen[-1].chunks_copied == 0 and seen[-1].chunks_reencoded == 12
    read = zarr.open_array(tmp_path / "out", mode="r", zarr_format=zarr_format)[...]
    np.testing.assert_array_equal(read, _expected(EXPECTED[name]))
