"""Zarr v2 `.zarray` / `.zgroup` / `.zattrs`: parsing, errors, writing as zarr-python does."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import warnings
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr

from aiozarr.codecs.chain import CodecChain
from aiozarr.errors import MetadataError
from aiozarr.metadata import (
    ArrayMetadata,
    ChunkKeyEncoding,
    GroupMetadata,
    attrs_to_json,
    parse_zarray,
    parse_zgroup,
    zarray_to_json,
    zgroup_to_json,
)
from aiozarr.metadata.conversions import v3_compressor
from aiozarr.metadata.model import CodecMetadata

KEY = "foo/.zarray"
BASE: dict[str, Any] = {
    "zarr_format": 2,
    "shape": [10, 20],
    "chunks": [5, 5],
    "dtype": ">f8",
    "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    "fill_value": "NaN",
    "order": "F",
    "filters": [{"id": "delta", "dtype": ">f8"}],
}


def doc(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    for name, value in changes.items():
        if value is ...:
            del out[name]
        else:
            out[name] = value
    return out


def test_parse_zarray() -> None:
    meta = parse_zarray(json.dumps(BASE).encode(), KEY, {"units": "m"})
    assert meta.zarr_format == 2 and meta.codecs == ()
    assert meta.shape == (10, 20) and meta.chunk_shape == (5, 5)
    assert meta.dtype == np.dtype(">f8") and meta.dtype.byteorder == ">"
    assert np.isnan(meta.fill_value)
    assert meta.order == "F"
    assert meta.compressor == BASE["compressor"]
    assert meta.filters == ({"id": "delta", "dtype": ">f8"},)
    assert meta.chunk_key_encoding == ChunkKeyEncoding("v2", ".")
    assert meta.attributes == {"units": "m"}
    assert meta.chunk_key((1, 2)) == "1.2"


def test_parse_optional_and_null_fields() -> None:
    meta = parse_zarray(doc(compressor=None, filters=None, fill_value=None), KEY)
    assert meta.compressor is None and meta.filters is None and meta.fill_value is None
    meta = parse_zarray(doc(dimension_separator="/", filters=...), KEY)
    assert meta.chunk_key_encoding == ChunkKeyEncoding("v2", "/") and meta.filters is None
    assert parse_zarray(doc(compressor=...), KEY).compressor is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"zarr_format": 3}, 'field "zarr_format": expected 2, got 3'),
        ({"zarr_format": ...}, 'missing required field "zarr_format"'),
        (
            {"shape": [-1, 2]},
            'field "shape": expected a list of non-negative integers, got [-1, 2]',
        ),
        ({"shape": ...}, 'missing required field "shape"'),
        ({"chunks": [0, 5]}, 'field "chunks": expected a list of positive integers, got [0, 5]'),
        ({"chunks": [5]}, 'field "chunks": expected 2 chunk lengths'),
        ({"chunks": ...}, 'missing required field "chunks"'),
        ({"dtype": "float64"}, 'field "dtype": expected a typestr with byte order'),
        ({"dtype": ...}, 'missing required field "dtype"'),
        ({"fill_value": ...}, 'missing required field "fill_value"'),
        ({"fill_value": "nan"}, 'field "fill_value": expected a number, "NaN"'),
        ({"order": "K"}, 'field "order": expected "C" or "F", got "K"'),
        ({"order": ...}, 'missing required field "order"'),
        ({"compressor": "zlib"}, 'field "compressor": expected a numcodecs configuration'),
        ({"compressor": {"level": 1}}, 'field "compressor"'),
        ({"filters": {"id": "delta"}}, 'field "filters": expected a list'),
        ({"filters": [{"id": 1}]}, 'field "filters[0]"'),
        ({"dimension_separator": "-"}, 'field "dimension_separator": expected "." or "/"'),
    ],
)
def test_errors(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataError) as info:
        parse_zarray(doc(**changes), KEY)
    assert str(info.value).startswith(f"{KEY}: ")
    assert message in str(info.value)


def test_other_fields_are_ignored() -> None:
    # The v2 spec: other keys SHOULD NOT be present and SHOULD be ignored. VirtualiZarr
    # writes "attributes" into `.zarray`; the attributes are `.zattrs`, as zarr-python reads.
    extra = doc(fill_value=0, attributes={"units": "K"}, surprise=[1, 2])
    meta = parse_zarray(json.dumps(extra).encode(), KEY, {"units": "m"})
    assert meta == parse_zarray(json.dumps(doc(fill_value=0)).encode(), KEY, {"units": "m"})
    assert parse_zarray(json.dumps(extra).encode(), KEY).attributes == {}
    assert "attributes" not in json.loads(zarray_to_json(meta))


@pytest.mark.parametrize("text", [b"{", b"[]", b"\x80"])
def test_malformed_json(text: bytes) -> None:
    with pytest.raises(MetadataError, match=f"^{KEY}: "):
        parse_zarray(text, KEY)


def test_attributes_must_be_an_object() -> None:
    with pytest.raises(MetadataError, match="attributes must be a JSON object"):
        parse_zarray(BASE, KEY, [1])  # type: ignore[arg-type]


def test_groups() -> None:
    group = parse_zgroup(b'{"zarr_format": 2}', "g/.zgroup", {"a": 1})
    assert group == GroupMetadata(zarr_format=2, attributes={"a": 1})
    assert json.loads(zgroup_to_json(group)) == {"zarr_format": 2}
    with pytest.raises(MetadataError, match=r'g/\.zgroup: field "zarr_format": expected 2'):
        parse_zgroup(b'{"zarr_format": 3}', "g/.zgroup")
    with pytest.raises(MetadataError, match='unknown field "x"'):
        parse_zgroup(b'{"zarr_format": 2, "x": 1}', "g/.zgroup")


def test_write_field_order() -> None:
    written = json.loads(zarray_to_json(parse_zarray(BASE, KEY)))
    assert list(written) == [
        "shape",
        "chunks",
        "dtype",
        "fill_value",
        "order",
        "filters",
        "dimension_separator",
        "compressor",
        "zarr_format",
    ]
    assert written["fill_value"] == "NaN" and written["dtype"] == ">f8"


def _read(store: Any, key: str) -> bytes:
    buffer = asyncio.run(store.get(key, zarr.core.buffer.default_buffer_prototype()))
    return bytes(buffer.to_bytes())


STRUCT = [("a", "<i4"), ("b", ">f8", (2, 2))]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dtype": "bool", "fill_value": True},
        {"dtype": "int8"},
        {"dtype": ">i4", "fill_value": -7},
        {"dtype": "uint64", "fill_value": 2**64 - 1},
        {"dtype": "float16"},
        {"dtype": ">f8", "fill_value": np.nan},
        {"dtype": "<f4", "fill_value": -np.inf},
        {"dtype": "complex64", "fill_value": complex(np.nan, 1)},
        {"dtype": "M8[ns]"},
        {"dtype": ">M8[s]", "fill_value": np.datetime64(5, "s")},
        {"dtype": "m8[10s]"},
        {"dtype": "U5", "fill_value": "ab"},
        {"dtype": "S3", "fill_value": b"ab"},
        {"dtype": "V2"},
        {"dtype": str},
        {"dtype": np.dtypes.StringDType()},
        {"dtype": "float32", "order": "F", "compressor": None},
        {"dtype": "float32", "filters": [numcodecs.Delta(dtype="<f4")]},
        {"dtype": "int32", "chunk_key_encoding": {"name": "v2", "separator": "/"}},
    ],
    ids=repr,
)
def test_round_trip_of_zarr_python_documents(kwargs: dict[str, Any]) -> None:
    store = zarr.storage.MemoryStore()
    kwargs = {"shape": (4, 6), "chunks": (2, 3), **kwargs}
    compressor = kwargs.pop("compressor", "auto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(
            store=store, zarr_format=2, attributes={"a": [1]}, compressors=compressor, **kwargs
        )
    theirs = _read(store, ".zarray")
    attrs = json.loads(_read(store, ".zattrs"))
    meta = parse_zarray(theirs, KEY, attrs)
    assert zarray_to_json(meta) == theirs
    assert attrs_to_json(meta.attributes) == _read(store, ".zattrs")
    again = parse_zarray(zarray_to_json(meta), KEY, attrs)
    assert zarray_to_json(again) == theirs and again.dtype == meta.dtype


def test_structured_dtype_with_sub_arrays_round_trips() -> None:
    # zarr-python 3.1 cannot create this one; zarr-python 2 wrote exactly this form
    fill = base64.b64encode(np.array((1, 2.0), dtype=STRUCT).tobytes()).decode()
    document = doc(dtype=[["a", "<i4"], ["b", ">f8", [2, 2]]], fill_value=fill, filters=None)
    meta = parse_zarray(document, KEY)
    assert meta.dtype == np.dtype(STRUCT)
    assert meta.fill_value["a"] == 1 and (meta.fill_value["b"] == 2.0).all()
    assert json.loads(zarray_to_json(meta))["dtype"] == [["a", "<i4"], ["b", ">f8", [2, 2]]]
    assert zarray_to_json(parse_zarray(zarray_to_json(meta), KEY)) == zarray_to_json(meta)


def test_zarr_python_reads_what_we_write() -> None:
    meta = parse_zarray(doc(compressor={"id": "zlib", "level": 1}, filters=None), KEY)
    store = zarr.storage.MemoryStore()
    buffer = zarr.core.buffer.cpu.Buffer.from_bytes(zarray_to_json(meta))
    asyncio.run(store.set(".zarray", buffer))
    array = zarr.open_array(store=store, mode="r", zarr_format=2)
    assert array.shape == (10, 20) and array.dtype == np.dtype(">f8")
    assert np.isnan(array.fill_value) and array.order == "F"


def test_v3_compressor_is_the_codec_that_reads_the_same_bytes() -> None:
    assert v3_compressor({"id": "zstd", "level": 3, "checksum": True}, 4) == CodecMetadata(
        "zstd", {"level": 3, "checksum": True}
    )
    assert v3_compressor({"id": "gzip"}, 4) == CodecMetadata("gzip", {"level": 1})
    autoshuffle = {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": -1, "blocksize": 0}
    for itemsize, shuffle in [(1, "bitshuffle"), (8, "shuffle")]:
        twin = v3_compressor(autoshuffle, itemsize)
        assert twin is not None and twin.configuration["shuffle"] == shuffle
        assert twin.configuration["typesize"] == itemsize
    assert v3_compressor({"id": "blosc", "shuffle": 7}, 4) is None
    assert v3_compressor({"id": "lz4"}, 4) is None
    # The twin decodes what numcodecs encoded.
    values = np.arange(1000, dtype="<f8")
    for config in [{"id": "zstd", "level": 1, "checksum": True}, {"id": "gzip", "level": 2}]:
        stored = numcodecs.get_codec(config).encode(values)
        twin = v3_compressor(config, 8)
        meta = ArrayMetadata(
            shape=(1000,),
            dtype=np.dtype("<f8"),
            chunk_shape=(1000,),
            fill_value=np.float64(0),
            zarr_format=3,
            codecs=(CodecMetadata("bytes", {"endian": "little"}), twin),
        )
        decoded = CodecChain.from_metadata(meta, "a").decode(stored)
        np.testing.assert_array_equal(decoded, values)
