"""v3 arrays with numcodecs' codecs (`numcodecs.zlib`, ...), as zarr-python 3 writes them:
zarr-python writes, aiozarr reads the same values and the other way round, plain and
inside shards; the metadata aiozarr writes is the metadata zarr-python writes."""

from __future__ import annotations

import importlib.util
import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import numcodecs
import numcodecs.registry
import numpy as np
import pytest
import zarr
import zarr.codecs.numcodecs as zn

import aiozarr
from aiozarr.errors import ChecksumError, MetadataError, UnsupportedError

SHAPE = (13, 10)
CHUNKS = (5, 4)


def _has(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def _numcodecs_has(codec_id: str) -> bool:
    return codec_id in numcodecs.registry.codec_registry


def _needs(package: str) -> Any:
    return pytest.mark.skipif(
        not _numcodecs_has(package),
        reason=f"numcodecs has no {package} codec here (it needs the {package} package)",
    )


# (id, dtype, where the codec goes, zarr-python codec, lossy)
CASES = [
    ("zlib", "f8", "compressors", lambda: zn.Zlib(level=3), False),
    ("shuffle", "i4", "compressors", lambda: zn.Shuffle(elementsize=4), False),
    ("delta", "i4", "filters", lambda: zn.Delta(dtype="<i4"), False),
    ("bitround", "f4", "filters", lambda: zn.BitRound(keepbits=6), True),
    ("quantize", "f8", "filters", lambda: zn.Quantize(digits=2, dtype="<f8"), True),
    (
        "fixedscaleoffset",
        "f8",
        "filters",
        lambda: zn.FixedScaleOffset(offset=10, scale=100, dtype="<f8", astype="<i4"),
        True,
    ),
    ("astype", "i8", "filters", lambda: zn.AsType(encode_dtype="<i2", decode_dtype="<i8"), False),
    ("packbits", "bool", "filters", lambda: zn.PackBits(), False),
    ("crc32", "u2", "compressors", lambda: zn.CRC32(), False),
    ("crc32c", "u2", "compressors", lambda: zn.CRC32C(), False),
    ("adler32", "u2", "compressors", lambda: zn.Adler32(), False),
    ("fletcher32", "u2", "compressors", lambda: zn.Fletcher32(), False),
    ("jenkins_lookup3", "u2", "compressors", lambda: zn.JenkinsLookup3(), False),
    ("blosc", "f4", "compressors", lambda: zn.Blosc(cname="zstd", clevel=3, shuffle=2), False),
    ("lz4", "i2", "compressors", lambda: zn.LZ4(acceleration=1), False),
    ("lzma", "i2", "compressors", lambda: zn.LZMA(preset=1), False),
    ("bz2", "i2", "compressors", lambda: zn.BZ2(level=2), False),
    ("gzip", "f8", "compressors", lambda: zn.GZip(level=4), False),
    ("zstd", "f8", "compressors", lambda: zn.Zstd(level=2), False),
    pytest.param(
        "pcodec", "f8", "serializer", lambda: zn.PCodec(level=4), False, marks=_needs("pcodec")
    ),
    pytest.param(
        "zfpy",
        "f8",
        "serializer",
        lambda: zn.ZFPY(mode=4, tolerance=1e-3),
        True,
        marks=_needs("zfpy"),
    ),
]


def _data(dtype: str, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 50).astype(dtype)
    return rng.integers(0, 1000, size=shape).astype(dtype)


def _zarr_codec(factory: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns that numcodecs.* is not core v3
        return factory()


def _zarr_write(path: Path, dtype: str, where: str, factory: Any, **kw: Any) -> np.ndarray:
    data = _data(dtype)
    options: dict[str, Any] = {
        where: [_zarr_codec(factory)] if where != "serializer" else _zarr_codec(factory)
    }
    if where == "filters":
        options.setdefault("compressors", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=dtype, **options, **kw)
        z[...] = data
    return data


def _codecs(path: Path) -> list[dict[str, Any]]:
    return json.loads((path / "zarr.json").read_text())["codecs"]


def _zarr_read(path: Path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r")[...]


@pytest.mark.parametrize(("codec_id", "dtype", "where", "factory", "lossy"), CASES)
def test_zarr_python_writes_aiozarr_reads(
    tmp_path: Path, codec_id: str, dtype: str, where: str, factory: Any, lossy: bool
) -> None:
    path = tmp_path / "z.zarr"
    data = _zarr_write(path, dtype, where, factory)
    assert any(c["name"] == f"numcodecs.{codec_id}" for c in _codecs(path))
    got = aiozarr.open_array(path)[...]
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, _zarr_read(path))
    if not lossy:
        np.testing.assert_array_equal(got, data)
    else:
        assert not np.array_equal(got, np.zeros_like(got))


@pytest.mark.parametrize(("codec_id", "dtype", "where", "factory", "lossy"), CASES)
def test_aiozarr_writes_zarr_python_reads(
    tmp_path: Path, codec_id: str, dtype: str, where: str, factory: Any, lossy: bool
) -> None:
    # zarr-python writes the reference metadata; aiozarr writes from its JSON spelling
    reference = tmp_path / "z.zarr"
    _zarr_write(reference, dtype, where, factory)
    spelled = _codecs(reference)
    ours = tmp_path / "a.zarr"
    data = _data(dtype)
    serializer = f"numcodecs.{codec_id}" if where == "serializer" else "bytes"
    split = next(i for i, c in enumerate(spelled) if c["name"] == serializer)
    a = aiozarr.create_array(
        ours,
        shape=SHAPE,
        chunks=CHUNKS,
        dtype=dtype,
        filters=spelled[:split],
        serializer=spelled[split],
        compressors=spelled[split + 1 :],
    )
    a[...] = data
    assert _codecs(ours) == spelled
    back = _zarr_read(ours)
    np.testing.assert_array_equal(back, aiozarr.open_array(ours)[...])
    if not lossy:
        np.testing.assert_array_equal(back, data)
    else:  # the same encoder: the same values as zarr-python's own round trip
        np.testing.assert_array_equal(back, _zarr_read(reference))


def test_zarr_python_codec_objects_with_fields_left_out(tmp_path: Path) -> None:
    # zarr-python fills in shuffle's elementsize and the filters' input dtype; so does aiozarr
    def codecs() -> dict[str, Any]:
        return {
            "filters": [_zarr_codec(lambda: zn.FixedScaleOffset(offset=0, scale=10))],
            "compressors": [_zarr_codec(zn.Shuffle), _zarr_codec(lambda: zn.Zlib(level=1))],
        }

    data = np.linspace(0, 100, 130).reshape(SHAPE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(
            str(tmp_path / "z.zarr"), shape=SHAPE, chunks=CHUNKS, dtype="f8", **codecs()
        )
        z[...] = data
    a = aiozarr.create_array(
        tmp_path / "a.zarr", shape=SHAPE, chunks=CHUNKS, dtype="f8", **codecs()
    )
    a[...] = data
    assert _codecs(tmp_path / "a.zarr") == _codecs(tmp_path / "z.zarr")
    np.testing.assert_array_equal(_zarr_read(tmp_path / "a.zarr"), _zarr_read(tmp_path / "z.zarr"))
    np.testing.assert_array_equal(a[...], np.round(data, 1))


SHARDED = [
    ("i4", {"compressors": [zn.Shuffle, lambda: zn.Zlib(level=5)]}),
    ("u2", {"compressors": [zn.Fletcher32]}),
    ("i4", {"filters": [lambda: zn.Delta(dtype="<i4")], "compressors": [zn.Zstd]}),
]


@pytest.mark.parametrize(
    ("dtype", "factories"), SHARDED, ids=["shuffle-zlib", "fletcher32", "delta"]
)
def test_inside_shards_both_ways(tmp_path: Path, dtype: str, factories: dict[str, Any]) -> None:
    def codecs() -> dict[str, Any]:
        return {k: [_zarr_codec(f) for f in v] for k, v in factories.items()}

    data = _data(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(
            str(tmp_path / "z.zarr"),
            shape=SHAPE,
            chunks=(5, 2),
            shards=(10, 4),
            dtype=dtype,
            **codecs(),
        )
        z[...] = data
    assert _codecs(tmp_path / "z.zarr")[0]["name"] == "sharding_indexed"
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "z.zarr")[...], data)
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "z.zarr")[3:9, 1:7], data[3:9, 1:7])

    a = aiozarr.create_array(
        tmp_path / "a.zarr", shape=SHAPE, chunks=(5, 2), shards=(10, 4), dtype=dtype, **codecs()
    )
    a[...] = data
    assert _codecs(tmp_path / "a.zarr") == _codecs(tmp_path / "z.zarr")
    np.testing.assert_array_equal(_zarr_read(tmp_path / "a.zarr"), data)


def test_checksum_mismatch_is_a_checksum_error(tmp_path: Path) -> None:
    path = tmp_path / "z.zarr"
    _zarr_write(path, "u2", "compressors", zn.Fletcher32)
    chunk = path / "c" / "0" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 0xFF
    chunk.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match="c/0/0"):
        aiozarr.open_array(path)[...]


def _metadata_with(path: Path, codecs: list[dict[str, Any]]) -> Path:
    path.mkdir()
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0,
        "codecs": codecs,
    }
    (path / "zarr.json").write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("codec", "package"),
    [
        ({"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}}, "zfpy"),
        ({"name": "numcodecs.pcodec", "configuration": {"level": 8}}, "pcodec"),
    ],
)
def test_missing_package_says_what_to_install(
    tmp_path: Path, codec: dict[str, Any], package: str
) -> None:
    if _has(package):
        pytest.skip(f"{package} is installed here")
    path = _metadata_with(tmp_path / "a.zarr", [codec])
    with pytest.raises(UnsupportedError, match=f"pip install {package}"):
        aiozarr.open_array(path)[...]
    # the v2 path words it the same way
    v2 = tmp_path / "v2.zarr"
    v2.mkdir()
    (v2 / ".zarray").write_text(
        json.dumps(
            {
                "zarr_format": 2,
                "shape": [4],
                "chunks": [4],
                "dtype": "<f8",
                "compressor": {"id": package},
                "fill_value": 0.0,
                "filters": None,
                "order": "C",
            }
        )
    )
    with pytest.raises(UnsupportedError, match=f"pip install {package}"):
        aiozarr.open_array(v2)[...]


def test_imagecodecs_id_says_to_register(tmp_path: Path) -> None:
    path = _metadata_with(
        tmp_path / "a.zarr",
        [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "numcodecs.imagecodecs_nope", "configuration": {}},
        ],
    )
    with pytest.raises(UnsupportedError, match=r"imagecodecs\.numcodecs\.register_codecs\(\)"):
        aiozarr.open_array(path)[...]


def test_unknown_numcodecs_id_is_unsupported(tmp_path: Path) -> None:
    path = _metadata_with(
        tmp_path / "a.zarr",
        [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "numcodecs.nope", "configuration": {}},
        ],
    )
    with pytest.raises(UnsupportedError, match="numcodecs has no codec 'nope'"):
        aiozarr.open_array(path)[...]


def test_filter_dtype_must_match_the_chunks(tmp_path: Path) -> None:
    path = _metadata_with(
        tmp_path / "a.zarr",
        [
            {"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}},
            {"name": "bytes", "configuration": {"endian": "little"}},
        ],
    )
    with pytest.raises(MetadataError, match="field 'dtype' is int32, but the chunks it is handed"):
        aiozarr.open_array(path)[...]


def test_codecs_pickle(tmp_path: Path) -> None:
    # dask ships arrays, and with them their codecs, to its workers by pickling
    path = tmp_path / "z.zarr"
    data = _zarr_write(path, "i4", "compressors", zn.Shuffle)
    a = pickle.loads(pickle.dumps(aiozarr.open_array(path)))
    np.testing.assert_array_equal(a[...], data)


def test_installed_package_numcodecs_cannot_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # numcodecs skips zfpy versions it cannot use (zfpy < 1.0.1 on numpy 2); a module of
    # that name on the path must not make the message say to install it again
    if _numcodecs_has("zfpy"):
        pytest.skip("numcodecs has a working zfpy codec here")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "zfpy.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    path = _metadata_with(tmp_path / "a.zarr", [{"name": "numcodecs.zfpy", "configuration": {}}])
    with pytest.raises(UnsupportedError, match="zfpy package is installed but numcodecs cannot"):
        aiozarr.open_array(path)[...]


@pytest.mark.parametrize(
    ("dtype", "factory", "where", "field"),
    [
        ("f8", lambda: zn.Shuffle(elementsize=8), "compressors", "elementsize"),
        ("i2", lambda: zn.Shuffle(elementsize=2), "compressors", "elementsize"),
        ("f8", lambda: zn.FixedScaleOffset(offset=1, scale=10, dtype="<f8"), "filters", "dtype"),
        (
            "f4",
            lambda: zn.AsType(encode_dtype="<f8", decode_dtype="<f4"),
            "filters",
            "decode_dtype",
        ),
    ],
)
def test_fields_left_out_are_read_as_zarr_python_reads_them(
    tmp_path: Path, dtype: str, factory: Any, where: str, field: str
) -> None:
    # zarr-python fills these on open too, from the array's dtype: metadata of other
    # writers may leave them out
    path = tmp_path / "z.zarr"
    data = _zarr_write(path, dtype, where, factory)
    doc = json.loads((path / "zarr.json").read_text())
    for codec in doc["codecs"]:
        codec.get("configuration", {}).pop(field, None)
    (path / "zarr.json").write_text(json.dumps(doc))
    expected = _zarr_read(path)
    if where == "compressors":
        np.testing.assert_array_equal(expected, data)
    np.testing.assert_array_equal(aiozarr.open_array(path)[...], expected)
