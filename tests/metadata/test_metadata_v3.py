"""Zarr v3 `zarr.json`: parsing every field, every error, writing as zarr-python does."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import warnings
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.metadata import (
    ArrayMetadata,
    ChunkKeyEncoding,
    CodecMetadata,
    GroupMetadata,
    array_to_json,
    group_to_json,
    parse_array,
    parse_group,
    parse_node,
)

KEY = "foo/zarr.json"
BASE: dict[str, Any] = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [10, 20],
    "data_type": "float32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": "NaN",
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
}


def doc(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    for name, value in changes.items():
        if value is ...:
            del out[name]
        else:
            out[name] = value
    return out


def test_parse_minimal_array() -> None:
    meta = parse_array(json.dumps(BASE).encode(), KEY)
    assert meta.shape == (10, 20) and meta.chunk_shape == (5, 5)
    assert meta.dtype == np.dtype("<f4") and meta.zarr_format == 3
    assert isinstance(meta.fill_value, np.float32) and np.isnan(meta.fill_value)
    assert meta.codecs == (CodecMetadata("bytes", {"endian": "little"}),)
    assert meta.chunk_key_encoding == ChunkKeyEncoding("default", "/")
    assert meta.attributes == {} and meta.dimension_names is None
    assert meta.data_type == "float32"


@pytest.mark.parametrize("form", [lambda d: json.dumps(d), lambda d: json.dumps(d).encode(), dict])
def test_parse_accepts_text_bytes_and_mappings(form: Any) -> None:
    assert parse_array(form(BASE), KEY).shape == (10, 20)


def test_parse_optional_fields() -> None:
    meta = parse_array(
        doc(
            attributes={"a": [1, {"b": None}], "nan": float("nan")},
            dimension_names=["y", None],
            storage_transformers=[],
            chunk_key_encoding={"name": "v2"},
        ),
        KEY,
    )
    assert meta.attributes["a"] == [1, {"b": None}]
    assert meta.dimension_names == ("y", None)
    assert meta.chunk_key_encoding == ChunkKeyEncoding("v2", ".")


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        ({"name": "default"}, ChunkKeyEncoding("default", "/")),
        (
            {"name": "default", "configuration": {"separator": "."}},
            ChunkKeyEncoding("default", "."),
        ),
        ({"name": "v2", "configuration": {}}, ChunkKeyEncoding("v2", ".")),
        ({"name": "v2", "configuration": {"separator": "/"}}, ChunkKeyEncoding("v2", "/")),
    ],
)
def test_chunk_key_encodings(encoding: dict[str, Any], expected: ChunkKeyEncoding) -> None:
    assert parse_array(doc(chunk_key_encoding=encoding), KEY).chunk_key_encoding == expected


def test_zero_dimensional_and_empty_arrays() -> None:
    grid = {"name": "regular", "configuration": {"chunk_shape": []}}
    assert parse_array(doc(shape=[], chunk_grid=grid), KEY).shape == ()
    assert parse_array(doc(shape=[0, 20]), KEY).shape == (0, 20)


def test_must_understand_false_extensions_are_ignored() -> None:
    meta = parse_array(doc(my_ext={"must_understand": False, "x": 1}), KEY)
    assert meta.shape == (10, 20)


def test_codec_objects_keep_their_configuration() -> None:
    codecs = [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes"},
        {"name": "anything-goes", "configuration": {"k": [1, 2]}},
    ]
    meta = parse_array(doc(codecs=codecs), KEY)
    assert [c.name for c in meta.codecs] == ["transpose", "bytes", "anything-goes"]
    assert meta.codecs[0].configuration == {"order": [1, 0]}
    assert meta.codecs[1].configuration == {}


GRID = "chunk_grid.configuration.chunk_shape"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"shape": [-1]}, 'field "shape": expected a list of non-negative integers, got [-1]'),
        ({"shape": [1.5, 2]}, 'field "shape": expected a list of non-negative integers'),
        ({"shape": [True, 2]}, 'field "shape"'),
        ({"shape": "10"}, 'field "shape"'),
        ({"shape": ...}, 'missing required field "shape"'),
        ({"zarr_format": 2}, 'field "zarr_format": expected 3, got 2'),
        ({"zarr_format": "3"}, 'field "zarr_format"'),
        ({"zarr_format": ...}, 'missing required field "zarr_format"'),
        ({"node_type": "group"}, 'field "node_type": expected "array", got "group"'),
        ({"node_type": ...}, 'missing required field "node_type"'),
        ({"data_type": ...}, 'missing required field "data_type"'),
        ({"data_type": 4}, 'field "data_type"'),
        ({"chunk_grid": ...}, 'missing required field "chunk_grid"'),
        ({"chunk_grid": "regular"}, 'field "chunk_grid.configuration"'),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 0]}}}, GRID),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}}}, GRID),
        (
            {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5], "x": 1}}},
            "chunk_grid",
        ),
        ({"chunk_grid": {"configuration": {}}}, 'field "chunk_grid"'),
        ({"chunk_key_encoding": ...}, 'missing required field "chunk_key_encoding"'),
        (
            {"chunk_key_encoding": {"name": "default", "configuration": {"separator": "-"}}},
            "separator",
        ),
        (
            {"chunk_key_encoding": {"name": "v2", "configuration": {"sep": "."}}},
            "chunk_key_encoding",
        ),
        ({"chunk_key_encoding": {"name": "default", "configuration": []}}, "configuration"),
        ({"fill_value": ...}, 'missing required field "fill_value"'),
        ({"fill_value": None}, 'field "fill_value": expected a number'),
        ({"fill_value": "0x7fc0"}, 'field "fill_value"'),
        ({"codecs": ...}, 'missing required field "codecs"'),
        # `[]` is a writer quirk read as `bytes` (tests/formats/test_quirks.py)
        ({"codecs": {}}, 'field "codecs": expected a non-empty list of codecs, got {}'),
        ({"codecs": [{"configuration": {}}]}, 'field "codecs[0]"'),
        ({"codecs": [{"name": "bytes", "extra": 1}]}, 'field "codecs[0]"'),
        ({"codecs": [{"name": "gzip", "configuration": 5}]}, 'field "codecs[0].configuration"'),
        ({"attributes": []}, 'field "attributes": expected an object, got []'),
        ({"dimension_names": ["x"]}, 'field "dimension_names": expected 2 names'),
        ({"dimension_names": ["x", 1]}, 'field "dimension_names": expected a list of strings'),
        ({"dimension_names": "xy"}, 'field "dimension_names"'),
        ({"storage_transformers": {}}, 'field "storage_transformers": expected a list'),
        ({"surprise": 1}, 'unknown field "surprise"'),
        ({"surprise": {"must_understand": True}}, 'unknown field "surprise"'),
        ({"surprise": {"x": 1}}, 'unknown field "surprise"'),
    ],
)
def test_errors(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataError) as info:
        parse_array(doc(**changes), KEY)
    assert str(info.value).startswith(f"{KEY}: ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"chunk_grid": {"name": "hexagonal", "configuration": {}}}, 'chunk grid "hexagonal"'),
        ({"chunk_key_encoding": {"name": "fancy"}}, 'encoding "fancy"'),
        ({"storage_transformers": [{"name": "t"}]}, "storage transformers are not supported"),
        ({"data_type": "float8_e4m3"}, 'unsupported data type "float8_e4m3"'),
    ],
)
def test_unsupported(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedError, match=message) as info:
        parse_array(doc(**changes), KEY)
    assert str(info.value).startswith(f"{KEY}: ")


@pytest.mark.parametrize("text", [b"{", b"\xff\xfe", b"[1, 2]", b"", b"null"])
def test_malformed_json(text: bytes) -> None:
    with pytest.raises(MetadataError, match=f"^{KEY}: "):
        parse_node(text, KEY)


def test_groups() -> None:
    group = parse_group(b'{"zarr_format": 3, "node_type": "group", "attributes": {"a": 1}}', KEY)
    assert group == GroupMetadata(zarr_format=3, attributes={"a": 1})
    assert parse_group({"zarr_format": 3, "node_type": "group"}, KEY).attributes == {}
    legacy = {"zarr_format": 3, "node_type": "group", "consolidated_metadata": None}
    assert parse_group(legacy, KEY).zarr_format == 3
    with pytest.raises(MetadataError, match='expected "group", got "array"'):
        parse_group(BASE, KEY)
    with pytest.raises(MetadataError, match='unknown field "shape"'):
        parse_group({"zarr_format": 3, "node_type": "group", "shape": [1]}, KEY)
    with pytest.raises(MetadataError, match='field "consolidated_metadata"'):
        parse_group({"zarr_format": 3, "node_type": "group", "consolidated_metadata": 1}, KEY)


def test_parse_node_dispatches() -> None:
    assert isinstance(parse_node(BASE, KEY), ArrayMetadata)
    assert isinstance(parse_node({"zarr_format": 3, "node_type": "group"}, KEY), GroupMetadata)
    with pytest.raises(MetadataError, match='"node_type": expected "array" or "group", got "x"'):
        parse_node(doc(node_type="x"), KEY)


def test_write_field_order_and_values() -> None:
    meta = parse_array(doc(dimension_names=["a", "b"], attributes={"x": 1}), KEY)
    written = json.loads(array_to_json(meta))
    assert list(written) == [
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "dimension_names",
        "zarr_format",
        "node_type",
        "storage_transformers",
    ]
    assert written["fill_value"] == "NaN"
    assert "dimension_names" not in json.loads(array_to_json(parse_array(BASE, KEY)))


def test_write_derives_data_type_when_the_model_has_none() -> None:
    meta = ArrayMetadata(
        shape=(4,),
        dtype=np.dtype(">M8[10s]"),
        chunk_shape=(2,),
        fill_value=np.datetime64("NaT"),
        codecs=(CodecMetadata("bytes", {"endian": "big"}),),
    )
    written = json.loads(array_to_json(meta))
    assert written["data_type"] == {
        "name": "numpy.datetime64",
        "configuration": {"unit": "s", "scale_factor": 10},
    }
    assert written["fill_value"] == -(2**63)


def test_write_structured_with_big_endian_fields_is_little_endian() -> None:
    dtype = np.dtype([("a", ">i2"), ("b", "<u1")])
    meta = ArrayMetadata(
        shape=(2,),
        dtype=dtype,
        chunk_shape=(2,),
        fill_value=np.array((1, 2), dtype=dtype)[()],
        codecs=(CodecMetadata("bytes"),),
    )
    written = json.loads(array_to_json(meta))
    assert written["data_type"]["configuration"]["fields"] == [
        {"name": "a", "data_type": "int16"},
        {"name": "b", "data_type": "uint8"},
    ]
    assert written["fill_value"] == {"a": 1, "b": 2}
    assert parse_array(written, KEY).fill_value.tolist() == (1, 2)


@pytest.mark.parametrize("sharded", [False, True])
def test_a_structured_base64_fill_is_in_the_bytes_codecs_byte_order(sharded: bool) -> None:
    """The structured data type's spec: the packed bytes of a base64 fill follow the
    `bytes` codec's `endian` (little where it is absent)."""
    big = [{"name": "bytes", "configuration": {"endian": "big"}}]
    codecs = big
    if sharded:
        config = {"chunk_shape": [5, 5], "codecs": big, "index_codecs": [{"name": "bytes"}]}
        codecs = [{"name": "sharding_indexed", "configuration": config}]
    fields = [["a", "int32"], ["b", "float32"]]
    packed = np.array((1, 2.5), dtype=[("a", ">i4"), ("b", ">f4")]).tobytes()
    meta = parse_array(
        doc(
            data_type={"name": "structured", "configuration": {"fields": fields}},
            fill_value=base64.b64encode(packed).decode(),
            codecs=codecs,
        ),
        KEY,
    )
    assert meta.fill_value.tolist() == (1, 2.5)
    written = json.loads(array_to_json(meta))
    assert base64.b64decode(written["fill_value"]) == packed
    little = parse_array(
        doc(
            data_type={"name": "structured", "configuration": {"fields": fields}},
            fill_value=base64.b64encode(packed[::-1]).decode(),
            codecs=[{"name": "bytes"}],
        ),
        KEY,
    )
    assert little.fill_value.tolist() == (1075838976, 1.401298464324817e-45)


def test_a_struct_fill_is_written_back_as_an_object() -> None:
    """zarr-python 3.4 writes a `struct` fill as an object by field: a rewrite (an
    attribute update) keeps that form, NaN payloads and nested structs included."""
    inner = {"name": "struct", "configuration": {"fields": [{"name": "c", "data_type": "int8"}]}}
    fields = [{"name": "a", "data_type": "float32"}, {"name": "b", "data_type": inner}]
    fill = {"a": "0x7fc00001", "b": {"c": -3}}
    data_type = {"name": "struct", "configuration": {"fields": fields}}
    meta = parse_array(doc(data_type=data_type, fill_value=fill), KEY)
    written = json.loads(array_to_json(meta))
    assert written["data_type"] == data_type and written["fill_value"] == fill


def test_write_keeps_the_documents_data_type() -> None:
    meta = parse_array(doc(data_type="r16", fill_value=[1, 2]), KEY)
    written = json.loads(array_to_json(meta))
    assert written["data_type"] == "r16" and written["fill_value"] == [1, 2]
    meta = parse_array(
        doc(data_type="bytes", fill_value=[1, 2], codecs=[{"name": "vlen-bytes"}]), KEY
    )
    written = json.loads(array_to_json(meta))
    assert written["data_type"] == "bytes" and written["fill_value"] == "AQI="


def test_write_numpy_values_in_attributes() -> None:
    meta = parse_array(BASE, KEY)
    meta = ArrayMetadata(**{**meta.__dict__, "attributes": {"n": np.int64(3), "a": np.arange(2)}})
    assert json.loads(array_to_json(meta))["attributes"] == {"n": 3, "a": [0, 1]}
    bad = ArrayMetadata(**{**meta.__dict__, "attributes": {"o": object()}})
    with pytest.raises(MetadataError, match="cannot write as JSON"):
        array_to_json(bad)


def test_group_to_json_matches_zarr_python() -> None:
    store = zarr.storage.MemoryStore()
    zarr.create_group(store=store, attributes={"a": 1, "b": "ü"})
    theirs = _read(store, "zarr.json")
    assert group_to_json(parse_group(theirs, KEY)) == theirs


def _read(store: Any, key: str) -> bytes:
    buffer = asyncio.run(store.get(key, zarr.core.buffer.default_buffer_prototype()))
    return bytes(buffer.to_bytes())


STRUCT = [("a", "<i4"), ("b", "<f8")]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dtype": "bool"},
        {"dtype": "int8", "fill_value": -3},
        {"dtype": "uint64", "fill_value": 2**64 - 1},
        {"dtype": "float16", "fill_value": 0.1},
        {"dtype": "float32", "fill_value": np.nan},
        {"dtype": "float64", "fill_value": -np.inf},
        {"dtype": ">f8", "fill_value": 1.5},
        {"dtype": "complex64", "fill_value": complex(np.nan, 1)},
        {"dtype": "complex128"},
        {"dtype": "M8[ns]"},
        {"dtype": "M8[ms]", "fill_value": np.datetime64(12, "ms")},
        {"dtype": "m8[10s]"},
        {"dtype": "U5", "fill_value": "ab"},
        {"dtype": "S3", "fill_value": b"ab"},
        {"dtype": "V2"},
        {"dtype": np.dtypes.StringDType(), "fill_value": "x"},
        {"dtype": STRUCT, "fill_value": np.array((1, 2.5), dtype=STRUCT)[()]},
        {"dtype": "int16", "dimension_names": ["x", None], "attributes": {"k": [1, "ü"]}},
        {"dtype": "int16", "shards": (4, 4), "chunks": (2, 2)},
        {"dtype": "float32", "compressors": None, "filters": None, "order": "F"},
        {"dtype": "uint8", "chunk_key_encoding": {"name": "v2", "separator": "/"}},
        {"dtype": "uint8", "chunk_key_encoding": {"name": "default", "separator": "."}},
    ],
    ids=repr,
)
def test_round_trip_of_zarr_python_documents(kwargs: dict[str, Any]) -> None:
    store = zarr.storage.MemoryStore()
    kwargs = {"shape": (4, 6), "chunks": (2, 3), **kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns about unstable v3 data types
        zarr.create_array(store=store, **kwargs)
    theirs = _read(store, "zarr.json")
    meta = parse_array(theirs, KEY)
    assert array_to_json(meta) == theirs
    assert parse_array(array_to_json(meta), KEY) == meta or _nan_equal(meta)


def _nan_equal(meta: ArrayMetadata) -> bool:
    # NaN != NaN: compare documents instead
    again = parse_array(array_to_json(meta), KEY)
    return array_to_json(again) == array_to_json(meta)


def test_zarr_python_reads_what_we_write() -> None:
    meta = ArrayMetadata(
        shape=(3,),
        dtype=np.dtype("<f4"),
        chunk_shape=(2,),
        fill_value=np.float32(np.nan),
        codecs=(CodecMetadata("bytes", {"endian": "little"}),),
        dimension_names=("t",),
        attributes={"units": "m"},
    )
    store = zarr.storage.MemoryStore()
    asyncio.run(store.set("zarr.json", zarr.core.buffer.cpu.Buffer.from_bytes(array_to_json(meta))))
    array = zarr.open_array(store=store, mode="r")
    assert (
        array.shape == (3,)
        and np.isnan(array.fill_value)
        and array.metadata.dimension_names == ("t",)
    )
    assert np.isnan(array[:]).all()


# --- property: random valid documents survive parse -> write -> parse -------------------------

_CORE = ["bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "float64", "complex64"]


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    ndim = draw(st.integers(0, 4))
    shape = draw(st.lists(st.integers(0, 50), min_size=ndim, max_size=ndim))
    chunks = draw(st.lists(st.integers(1, 20), min_size=ndim, max_size=ndim))
    data_type = draw(st.sampled_from(_CORE))
    dtype = np.dtype(data_type)
    if dtype.kind == "b":
        fill: Any = draw(st.booleans())
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        fill = draw(st.integers(int(info.min), int(info.max)))
    else:
        part = st.one_of(
            st.sampled_from(["NaN", "Infinity", "-Infinity"]),
            st.floats(
                allow_nan=False,
                allow_infinity=False,
                width=8 * dtype.itemsize // (2 if dtype.kind == "c" else 1),
            ),
            st.integers(0, 2 ** (8 * dtype.itemsize // (2 if dtype.kind == "c" else 1)) - 1).map(
                lambda b, d=dtype: f"0x{b:0{d.itemsize if d.kind == 'c' else 2 * d.itemsize}x}"
            ),
        )
        fill = draw(st.lists(part, min_size=2, max_size=2)) if dtype.kind == "c" else draw(part)
    out = doc(
        shape=shape,
        data_type=data_type,
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": chunks}},
        chunk_key_encoding={
            "name": draw(st.sampled_from(["default", "v2"])),
            "configuration": {"separator": draw(st.sampled_from(["/", "."]))},
        },
        fill_value=fill,
        attributes=draw(
            st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)
        ),
    )
    if draw(st.booleans()):
        out["dimension_names"] = draw(
            st.lists(st.none() | st.text(max_size=4), min_size=ndim, max_size=ndim)
        )
    return out


@settings(max_examples=60, deadline=None)
@given(documents())
def test_property_round_trip(document: dict[str, Any]) -> None:
    meta = parse_array(json.dumps(document), KEY)
    written = array_to_json(meta)
    again = parse_array(written, KEY)
    assert array_to_json(again) == written
    assert again.shape == meta.shape and again.chunk_shape == meta.chunk_shape
    assert again.dtype == meta.dtype and again.attributes == meta.attributes
    # the fill value survives bit for bit (NaN payloads included)
    assert np.array(again.fill_value).tobytes() == np.array(meta.fill_value).tobytes()
