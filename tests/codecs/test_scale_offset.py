"""`scale_offset`: the arithmetic of the input data type, integers never wrapped or
truncated (a value the type cannot hold is a `CodecError` naming the chunk), compared
with exact Python-int arithmetic by property; configuration as the spec and
zarr-python write it."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aiozarr
from aiozarr.codecs import ChunkSpec, CodecChain, get_codec
from aiozarr.codecs.scale_offset import ScaleOffsetCodec
from aiozarr.errors import CodecError, MetadataError

INTEGERS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _spec(dtype: str, fill: Any = 0, shape: tuple[int, ...] = (4,)) -> ChunkSpec:
    return ChunkSpec(shape, np.dtype(dtype), np.dtype(dtype).type(fill), "c/0")


def _codec(offset: Any, scale: Any, dtype: str) -> ScaleOffsetCodec:
    codec = ScaleOffsetCodec(offset=offset, scale=scale)
    codec.validate(_spec(dtype))
    return codec


@st.composite
def _integer_cases(draw: Any) -> tuple[str, int, int, np.ndarray]:
    dtype = np.dtype(draw(st.sampled_from(INTEGERS)))
    info = np.iinfo(dtype)
    # small values too, so that most cases fit and both branches are met
    scalars = st.one_of(st.integers(-3, 3), st.integers(int(info.min), int(info.max)))
    offset = draw(scalars.filter(lambda v: info.min <= v <= info.max))
    scale = draw(scalars.filter(lambda v: v != 0 and info.min <= v <= info.max))
    values = draw(hnp.arrays(dtype, st.integers(0, 6)))
    return dtype.name, offset, scale, values


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(_integer_cases())
def test_integer_arithmetic_is_exact_or_refused(case: tuple[str, int, int, np.ndarray]) -> None:
    dtype, offset, scale, values = case
    codec, spec = _codec(offset, scale, dtype), _spec(dtype, shape=values.shape)
    info = np.iinfo(dtype)
    encoded = [(int(v) - offset) * scale for v in values]
    if all(info.min <= e <= info.max for e in encoded):
        got = codec.encode(values, spec)
        assert got.dtype == values.dtype and got.tolist() == encoded
    else:
        with pytest.raises(CodecError, match="outside"):
            codec.encode(values, spec)
    decoded = [int(v) // scale + offset for v in values]
    if any(int(v) % scale for v in values):
        with pytest.raises(CodecError, match="non-zero remainder"):
            codec.decode(values, spec)
    elif all(info.min <= d <= info.max for d in decoded):
        got = codec.decode(values, spec)
        assert got.dtype == values.dtype and got.tolist() == decoded
    else:
        with pytest.raises(CodecError, match="outside"):
            codec.decode(values, spec)


def test_the_minimum_divided_by_minus_one_does_not_wrap() -> None:
    # -128 // -1 leaves int8 (numpy wraps it to -128); + offset -1 brings it back
    codec = _codec(-1, -1, "int8")
    got = codec.decode(np.array([-128, 4], dtype="int8"), _spec("int8"))
    assert got.tolist() == [127, -5]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_floats_stay_in_their_width(dtype: str) -> None:
    codec = _codec(5, 0.1, dtype)
    values = np.array([5.0, 15.0, -1e30 if dtype != "float16" else -6e4, np.nan], dtype)
    encoded = codec.encode(values, _spec(dtype))
    t = np.dtype(dtype).type
    expected = (values - t(5)) * t(0.1)
    assert encoded.dtype == values.dtype
    np.testing.assert_array_equal(encoded, expected)
    np.testing.assert_array_equal(codec.decode(encoded, _spec(dtype)), expected / t(0.1) + t(5))


def test_offset_and_scale_are_fill_value_json() -> None:
    codec = _codec("NaN", "0x3ff0000000000000", "float64")  # scale: the bits of 1.0
    got = codec.encode(np.array([1.0, 2.0]), _spec("float64"))
    assert np.isnan(got).all()
    with pytest.raises(MetadataError, match="no int8 value"):
        _codec(300, 1, "int8")


@pytest.mark.parametrize(
    ("configuration", "dtype", "problem"),
    [
        ({"offset": 0, "scale": 0}, "int16", "must not be 0"),
        ({"offset": 1, "scale": "0x0000000000000000"}, "float64", "must not be 0"),
        ({"offset": 0, "scale": 1}, "complex64", "integer and floating-point"),
        ({"offset": 0, "scale": 1}, "bool", "integer and floating-point"),
        ({"offset": [1], "scale": 1}, "int16", "JSON scalar"),
        ({"offset": True, "scale": 1}, "int16", "JSON scalar"),
        # the field at fault is named, with what its data type's fill value encoding takes
        ({"offset": 0, "scale": "2"}, "int16", r"field 'scale' is '2', no int16 value .*integer"),
        ({"offset": 0.5, "scale": 2}, "int8", r"field 'offset' is 0\.5, no int8 value"),
        ({"offset": "0x3f800000", "scale": 1}, "float64", r"field 'offset' .*16 hex digits"),
    ],
)
def test_a_bad_configuration_is_a_metadata_error(
    configuration: dict[str, Any], dtype: str, problem: str
) -> None:
    with pytest.raises(MetadataError, match=problem):
        get_codec({"name": "scale_offset", "configuration": configuration}).validate(_spec(dtype))


def test_a_member_the_spec_does_not_name_is_refused() -> None:
    # "Metadata with additional keys MUST be treated as invalid by readers"
    with pytest.raises(MetadataError, match="extra"):
        get_codec({"name": "scale_offset", "configuration": {"offset": 0, "scale": 1, "extra": 1}})


def test_zarr_pythons_short_forms_are_read_and_both_members_written() -> None:
    # zarr-python leaves out offset 0, scale 1, and the whole configuration when both are
    assert get_codec({"name": "scale_offset"}).configuration() == {"offset": 0, "scale": 1}
    assert get_codec({"name": "scale_offset", "configuration": {"scale": 2}}).configuration() == {
        "offset": 0,
        "scale": 2,
    }


def test_the_fill_value_is_stored_encoded() -> None:
    codecs = [
        {"name": "scale_offset", "configuration": {"offset": 10, "scale": 3}},
        {"name": "bytes", "configuration": {"endian": "little"}},
    ]
    chain = CodecChain.from_codecs([get_codec(c) for c in codecs], _spec("int16", fill=12))
    stored = chain.encode(np.full(4, 12, dtype="int16"))
    assert np.frombuffer(stored, "<i2").tolist() == [6, 6, 6, 6]
    with pytest.raises(MetadataError, match="fill value"):
        CodecChain.from_codecs(
            [ScaleOffsetCodec(offset=100, scale=2), get_codec(codecs[1])],
            _spec("int8", fill=1),
        )


def test_an_array_round_trips_and_a_stored_value_it_cannot_decode_names_its_chunk(
    tmp_path: Any,
) -> None:
    path = str(tmp_path / "a.zarr")
    filters = [{"name": "scale_offset", "configuration": {"offset": 100, "scale": 4}}]
    arr = aiozarr.create_array(
        path, shape=(6,), chunks=(3,), dtype="int16", filters=filters, compressors=None
    )
    arr[:] = np.arange(100, 106, dtype="int16")
    assert arr[:].tolist() == list(range(100, 106))
    with pytest.raises(CodecError, match=r"'c/0'.*outside the range of dtype int16"):
        arr[0] = 9000  # (9000 - 100) * 4 is past int16: nothing is written
    assert arr[:].tolist() == list(range(100, 106))
    # a chunk another writer stored with a value that is no multiple of the scale
    (tmp_path / "a.zarr" / "c" / "1").write_bytes(np.array([1, 4, 8], "<i2").tobytes())
    with pytest.raises(CodecError, match=r"c/1.*non-zero remainder when divided by scale 4"):
        arr[3:]


def _strict_json(text: bytes) -> Any:
    """`text` parsed as RFC 8259 JSON: a bare `NaN` or `Infinity` is refused."""

    def refuse(token: str) -> None:
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("shards", [None, (4,)])
def test_offset_and_scale_are_written_in_the_fill_value_encoding(
    tmp_path: Any, shards: Any
) -> None:
    # JSON has no NaN or infinity (the spec: "NaN", "Infinity", "-Infinity"), and an
    # integer type's fill value encoding has no fraction part
    cases = [
        ("float64", float("nan"), float("-inf"), {"offset": "NaN", "scale": "-Infinity"}),
        ("float32", 0.5, float("inf"), {"offset": 0.5, "scale": "Infinity"}),
        ("int16", 2.0, -2.0, {"offset": 2, "scale": -2}),
    ]
    for i, (dtype, offset, scale, written) in enumerate(cases):
        path = tmp_path / f"{i}.zarr"
        filters = [{"name": "scale_offset", "configuration": {"offset": offset, "scale": scale}}]
        arr = aiozarr.create_array(
            str(path), shape=(4,), chunks=(2,), shards=shards, dtype=dtype, filters=filters
        )
        arr[:2] = [4, 6]
        codecs = _strict_json((path / "zarr.json").read_bytes())["codecs"]
        if shards is not None:
            codecs = codecs[0]["configuration"]["codecs"]
        assert codecs[0] == {"name": "scale_offset", "configuration": written}
        if dtype == "int16":
            assert aiozarr.open_array(str(path))[:2].tolist() == [4, 6]


def test_a_fill_value_the_codec_cannot_encode_names_the_document(tmp_path: Any) -> None:
    # (0 - 3) * 2 is no uint8: refused on create, and on open of an array another
    # writer made, naming the metadata document as every other metadata error does
    filters = [{"name": "scale_offset", "configuration": {"offset": 3, "scale": 2}}]
    options = {"shape": (4,), "chunks": (2,), "dtype": "uint8", "fill_value": 0}
    with pytest.raises(MetadataError, match=r"zarr\.json: fill value .* outside the range"):
        aiozarr.create_array(str(tmp_path / "new.zarr"), filters=filters, **options)
    aiozarr.create_array(str(tmp_path / "a.zarr"), **{**options, "fill_value": 5})
    doc = tmp_path / "a.zarr" / "zarr.json"
    meta = json.loads(doc.read_bytes())
    meta["fill_value"] = 0
    meta["codecs"].insert(0, filters[0])
    doc.write_text(json.dumps(meta))
    with pytest.raises(MetadataError, match=r"zarr\.json: fill value .* outside the range"):
        aiozarr.open_array(str(tmp_path / "a.zarr"))
