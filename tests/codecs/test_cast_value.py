"""`cast_value`: every rounding mode and out-of-range handling compared by property with
an exact model (Python ints and fractions) for integer and float sources and targets;
NaN and infinity; the configuration; `scalar_map`; and arrays that store floats as
small integers behind `scale_offset`, sharded and not."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aiozarr
from aiozarr.codecs import ChunkSpec, CodecChain, get_codec
from aiozarr.codecs.cast_value import ROUNDINGS, CastValueCodec
from aiozarr.errors import CodecError, MetadataError, UnsupportedError

INTEGERS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
REFUSED = "refused"


def _spec(dtype: str, fill: Any = 0, shape: tuple[int, ...] = (4,)) -> ChunkSpec:
    return ChunkSpec(shape, np.dtype(dtype), np.dtype(dtype).type(fill), "c/0")


def _codec(source: str, **configuration: Any) -> CastValueCodec:
    codec = get_codec({"name": "cast_value", "configuration": configuration})
    codec.validate(_spec(source))
    assert isinstance(codec, CastValueCodec)
    return codec


# --- the model: exact values ---------------------------------------------------------


def _round(q: Fraction, rounding: str) -> int:
    floor = q.numerator // q.denominator
    rest = q - floor
    half = Fraction(1, 2)
    if rounding == "towards-negative" or (rest == 0):
        return floor
    if rounding == "towards-positive":
        return floor + 1
    if rounding == "towards-zero":
        return floor if q > 0 else floor + 1
    if rest != half:
        return floor + (rest > half)
    if rounding == "nearest-away":
        return floor + 1 if q > 0 else floor
    return floor + (floor % 2)  # nearest-even


def _model_int(value: Any, target: np.dtype[Any], rounding: str, out_of_range: Any) -> Any:
    info = np.iinfo(target)
    low, high = int(info.min), int(info.max)
    if isinstance(value, float) and np.isnan(value):
        return REFUSED  # whatever out_of_range says
    if isinstance(value, float) and np.isinf(value):
        return (high if value > 0 else low) if out_of_range == "clamp" else REFUSED
    n = _round(Fraction(value), rounding)
    if low <= n <= high:
        return n
    if out_of_range == "clamp":
        return min(max(n, low), high)
    if out_of_range == "wrap":
        return (n - low) % (high - low + 1) + low
    return REFUSED


def _floor_log2(v: Fraction) -> int:
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > v else e


def _model_float(value: Any, target: np.dtype[Any], rounding: str, out_of_range: Any) -> Any:
    if isinstance(value, float) and not np.isfinite(value):
        return value  # NaN and ±inf exist in every float type
    v = Fraction(value)
    if v == 0:
        return float(value)  # keeps the sign of a float zero
    info = np.finfo(target)
    digits = info.nmant + 1
    unit = Fraction(2) ** (max(_floor_log2(abs(v)), info.minexp) - (digits - 1))
    rounded = _round(v / unit, rounding) * unit
    if abs(rounded) > Fraction(float(info.max)):
        return (float("inf") if v > 0 else float("-inf")) if out_of_range == "clamp" else REFUSED
    return float(rounded) if rounded != 0 else (0.0 if v > 0 else -0.0)


def _model(values: np.ndarray, target: np.dtype[Any], rounding: str, out_of_range: Any) -> Any:
    model = _model_int if target.kind in "iu" else _model_float
    found = [model(v, target, rounding, out_of_range) for v in values.tolist()]
    return REFUSED if REFUSED in found else found


def _same(got: np.ndarray, expected: list[Any]) -> None:
    assert got.dtype.kind in "iuf"
    want = np.array(expected, dtype=got.dtype)
    if got.dtype.kind == "f":  # bit for bit (signed zeros) apart from NaN payloads
        assert np.array_equal(np.isnan(got), np.isnan(want))
        bits = f"u{got.dtype.itemsize}"
        keep = ~np.isnan(got)
        assert got[keep].view(bits).tolist() == want[keep].view(bits).tolist()
    else:
        assert got.tolist() == expected


# --- cases ---------------------------------------------------------------------------


def _source_values(draw: Any, source: np.dtype[Any], target: np.dtype[Any]) -> np.ndarray:
    if source.kind in "iu":
        info = np.iinfo(source)
        edges = [int(info.min), int(info.max), 2**53 + 1, 2**60 + 2**36 + 1, 2**24 + 1, 65520]
        anywhere = st.integers(int(info.min), int(info.max))
        ints = st.one_of(st.integers(-300, 300), anywhere, st.sampled_from(edges))
        ints = ints.map(lambda n: n if info.min <= n <= info.max else n % 100)  # one it holds
        return np.array(draw(st.lists(ints, min_size=1, max_size=6)), dtype=source)
    ends = [65504.0, 65519.0, 65520.0, 70000.0, 255.5, 127.5, -128.5, 2.0**63, 2.0**64, 3e38]
    if target.kind == "f":
        tiny = float(np.finfo(target).smallest_subnormal)
        ends += [tiny / 2, tiny * 1.5, -tiny / 2, float(np.finfo(target).max) * 1.0000001]
    floats = st.one_of(
        st.integers(-600, 600).map(lambda n: n / 2),
        st.floats(-1e3, 1e3),
        st.floats(),
        st.sampled_from(ends).flatmap(lambda v: st.sampled_from([v, -v])),
    )
    with np.errstate(over="ignore"):
        return np.array(draw(st.lists(floats, min_size=1, max_size=6)), dtype=source)


@st.composite
def _cases(draw: Any) -> tuple[np.ndarray, np.dtype[Any], str, Any]:
    source = np.dtype(draw(st.sampled_from(INTEGERS + FLOATS)))
    target = np.dtype(draw(st.sampled_from(INTEGERS + FLOATS)))
    rounding = draw(st.sampled_from(ROUNDINGS))
    modes = [None, "clamp", "wrap"] if target.kind in "iu" else [None, "clamp"]
    out_of_range = draw(st.sampled_from(modes))
    return _source_values(draw, source, target), target, rounding, out_of_range


@settings(max_examples=1500, derandomize=True, database=None, deadline=None)
@given(_cases())
def test_encode_and_decode_are_the_exact_model(case: tuple[Any, ...]) -> None:
    values, target, rounding, out_of_range = case
    expected = _model(values, target, rounding, out_of_range)
    source, config = values.dtype.name, {"rounding": rounding, "out_of_range": out_of_range}
    # encode casts to `data_type`; decode casts the other way, to the input data type
    encoder = _codec(source, data_type=target.name, **config)
    runs = [lambda: encoder.encode(values, _spec(source))]
    if out_of_range != "wrap" or values.dtype.kind in "iu":  # else no such codec
        decoder = _codec(target.name, data_type=source, **config)
        runs.append(lambda: decoder.decode(values, _spec(target.name)))
    for run in runs:
        if expected == REFUSED:
            with pytest.raises(CodecError, match=r"out of range|NaN|infinite"):
                run()
        else:
            got = run()
            assert got.dtype == target
            _same(got, expected)


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_halves_to_an_integer(rounding: str) -> None:
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 2.5000000000000004])
    got = _codec("float64", data_type="int16", rounding=rounding).encode(values, _spec("float64"))
    assert got.tolist() == [_round(Fraction(v), rounding) for v in values.tolist()]


def test_nan_into_an_integer_is_refused_whatever_out_of_range_says() -> None:
    for mode in (None, "clamp", "wrap"):
        codec = _codec("float32", data_type="uint8", out_of_range=mode)
        with pytest.raises(CodecError, match="NaN has no uint8 value"):
            codec.encode(np.array([1.0, np.nan], "float32"), _spec("float32"))
    # floats keep NaN (and its sign) and infinity
    codec = _codec("float64", data_type="float16")
    got = codec.encode(np.array([-np.nan, np.inf, -np.inf]), _spec("float64"))
    assert np.isnan(got[0]) and np.signbit(got[0]) and got[1:].tolist() == [np.inf, -np.inf]


def test_infinity_is_out_of_an_integers_range() -> None:
    values = np.array([np.inf, -np.inf, 3.0])
    clamped = _codec("float64", data_type="int8", out_of_range="clamp").encode(
        values, _spec("float64")
    )
    assert clamped.tolist() == [127, -128, 3]
    with pytest.raises(CodecError, match="out of range of dtype int8"):
        _codec("float64", data_type="int8").encode(values, _spec("float64"))
    with pytest.raises(CodecError, match="infinite value has no wrapped value"):
        _codec("float64", data_type="int8", out_of_range="wrap").encode(values, _spec("float64"))


def test_a_float_past_the_targets_largest_value_clamps_to_infinity() -> None:
    # zarr-python's choice for float targets: ±inf are the float type's ends
    values = np.array([1e10, -1e10, 65519.0])
    codec = _codec("float64", data_type="float16", out_of_range="clamp")
    assert codec.encode(values, _spec("float64")).tolist() == [np.inf, -np.inf, 65504.0]
    with pytest.raises(CodecError, match=r"10000000000\.0 is out of range of dtype float16"):
        _codec("float64", data_type="float16").encode(values, _spec("float64"))


# --- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("configuration", "source", "problem"),
    [
        ({"data_type": "float32", "out_of_range": "wrap"}, "float64", "only valid for integer"),
        ({"data_type": "complex64"}, "float64", "only supports integer and floating-point"),
        ({"data_type": "bool"}, "int8", "only supports integer and floating-point"),
        ({"data_type": "uint8"}, "complex128", "only supports integer and floating-point"),
        ({"data_type": "uint8"}, "bool", "only supports integer and floating-point"),
        ({"data_type": "uint8", "rounding": "up"}, "float64", "'rounding' must be one of"),
        ({"data_type": "uint8", "out_of_range": "saturate"}, "float64", "'out_of_range' must"),
        ({"data_type": "uint8", "extra": 1}, "float64", "extra"),
        ({"data_type": 8}, "float64", "data_type"),
        ({"rounding": "towards-zero"}, "float64", "data_type"),
        ({"data_type": "uint8", "scalar_map": [["NaN", 0]]}, "float64", "scalar_map"),
        ({"data_type": "uint8", "scalar_map": {"encode": [[1]]}}, "float64", "pairs"),
        ({"data_type": "uint8", "scalar_map": {"both": []}}, "float64", "scalar_map"),
        (
            {"data_type": "int8", "scalar_map": {"encode": [["NaN", 0]]}},
            "int32",
            "encode key 'NaN' is not representable in dtype int32",
        ),
        (
            {"data_type": "float64", "scalar_map": {"decode": [[0, "NaN"]]}},
            "int32",
            "decode value 'NaN' is not representable in dtype int32",
        ),
        (
            {"data_type": "int8", "scalar_map": {"encode": [["NaN", 999]]}},
            "float64",
            "not representable in dtype int8",
        ),
        (
            {"data_type": "int8", "scalar_map": {"encode": [["NaN", 1.5]]}},
            "float64",
            "not representable in dtype int8",
        ),
    ],
)
def test_a_bad_configuration_is_a_metadata_error(
    configuration: dict[str, Any], source: str, problem: str
) -> None:
    with pytest.raises(MetadataError, match=problem):
        _codec(source, **configuration)


def test_a_data_type_aiozarr_does_not_have_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="int4"):
        _codec("float64", data_type="int4")


def test_the_configuration_is_written_as_zarr_python_writes_it() -> None:
    assert _codec("float64", data_type="uint8").configuration() == {"data_type": "uint8"}
    full = {
        "data_type": "int16",
        "rounding": "towards-zero",
        "out_of_range": "clamp",
        "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]},
    }
    assert _codec("float64", **full).configuration() == full
    # the spec's explicit "error" is the absent member; the default rounding is left out
    explicit = _codec("float64", data_type="uint8", rounding="nearest-even", out_of_range="error")
    assert explicit.configuration() == {"data_type": "uint8"}


def test_scalar_map_maps_before_the_cast_both_ways() -> None:
    codec = _codec(
        "float64",
        data_type="uint8",
        scalar_map={"encode": [["NaN", 255], [1.0, 7], [1.0, 9]], "decode": [[255, "NaN"]]},
    )
    values = np.array([np.nan, 1.0, 2.0, -0.0])
    encoded = codec.encode(values, _spec("float64"))
    assert encoded.tolist() == [255, 9, 2, 0]  # a later entry wins, as in a JSON-built dict
    decoded = codec.decode(encoded, _spec("float64"))
    assert np.isnan(decoded[0]) and decoded[1:].tolist() == [9.0, 2.0, 0.0]
    # a mapped value is not range-checked; an unmapped one still is
    with pytest.raises(CodecError, match="out of range"):
        codec.encode(np.array([300.0]), _spec("float64"))


def test_the_fill_value_is_stored_encoded_in_the_target_type() -> None:
    codecs = [
        {"name": "cast_value", "configuration": {"data_type": "int8", "rounding": "towards-zero"}},
        {"name": "bytes", "configuration": {}},
    ]
    chain = CodecChain.from_codecs([get_codec(c) for c in codecs], _spec("float32", fill=-2.7))
    stored = chain.encode(np.array([-2.7, 3.9, 100.2, -128.0], dtype="float32"))
    assert np.frombuffer(stored, "i1").tolist() == [-2, 3, 100, -128]
    assert chain.decode(stored).tolist() == [-2.0, 3.0, 100.0, -128.0]
    assert chain.decode(stored).dtype == np.float32
    with pytest.raises(MetadataError, match=r"fill value.*NaN has no int8 value"):
        CodecChain.from_codecs([get_codec(c) for c in codecs], _spec("float32", fill=np.nan))


# --- arrays --------------------------------------------------------------------------

SCALE_OFFSET = {"name": "scale_offset", "configuration": {"offset": 10, "scale": 100}}
DATA = np.round(np.linspace(10.0, 12.5, 60), 2).reshape(10, 6)


def _stored_model(data: np.ndarray) -> np.ndarray:
    """What [scale_offset(10, 100), cast_value(uint8, clamp)] reads back: the float64
    arithmetic of scale_offset, rounded half to even, clamped to [0, 255]."""
    return np.clip(np.rint((data - 10.0) * 100.0), 0, 255) / 100.0 + 10.0


def _filters(**cast: Any) -> list[dict[str, Any]]:
    return [SCALE_OFFSET, {"name": "cast_value", "configuration": {"data_type": "uint8", **cast}}]


@pytest.mark.parametrize("shards", [None, (6, 4)])
def test_floats_stored_as_uint8_round_trip(tmp_path: Path, shards: Any) -> None:
    arr = aiozarr.create_array(
        str(tmp_path / "a.zarr"),
        shape=(10, 6),
        chunks=(3, 2),
        shards=shards,
        dtype="float64",
        fill_value=10.0,
        filters=_filters(out_of_range="clamp"),
    )
    arr[:8] = DATA[:8]
    arr[9, 1:4] = [13.0, 9.0, 11.114]  # clamped to 12.55 and 10.0; rounded to 11.11
    expected = np.full((10, 6), 10.0)
    expected[:8] = DATA[:8]
    expected[9, 1:4] = [13.0, 9.0, 11.114]
    expected = _stored_model(expected)
    np.testing.assert_array_equal(arr[:], expected)
    np.testing.assert_array_equal(arr[[9, 0, 4], 1:5], expected[[9, 0, 4], 1:5])
    assert arr.dtype == np.float64


def test_before_the_sharding_codec_inner_chunks_are_read_and_written_alone(
    tmp_path: Path,
) -> None:
    sharding = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2, 3],
            "codecs": [{"name": "bytes", "configuration": {}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        },
    }
    path = tmp_path / "a.zarr"
    arr = aiozarr.create_array(
        str(path),
        shape=(10, 6),
        chunks=(10, 6),
        dtype="float64",
        fill_value=10.0,
        filters=_filters(out_of_range="clamp"),
        serializer=sharding,
        compressors=None,
    )
    assert (arr.chunks, arr.shards) == ((2, 3), (10, 6))
    arr[:4] = DATA[:4]
    expected = np.full((10, 6), 10.0)
    expected[:4] = DATA[:4]
    np.testing.assert_array_equal(arr[:], _stored_model(expected))
    # each stored inner chunk is 6 bytes of uint8, the index 16 bytes per inner chunk
    assert (path / "c" / "0" / "0").stat().st_size == 4 * 6 + 10 * 16
    arr[9, 1:4] = [11.0, 11.5, 12.0]
    expected[9, 1:4] = [11.0, 11.5, 12.0]
    np.testing.assert_array_equal(arr[8:, :], _stored_model(expected)[8:, :])


def test_a_chunk_that_cannot_be_encoded_names_its_key_and_is_left_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.zarr"
    arr = aiozarr.create_array(
        str(path),
        shape=(6,),
        chunks=(3,),
        dtype="float64",
        fill_value=10.0,
        filters=_filters(),
        compressors=None,
    )
    arr[:] = [10.0, 10.5, 11.0, 11.5, 12.0, 12.5]
    before = (path / "c" / "1").read_bytes()
    assert np.frombuffer(before, "u1").tolist() == [150, 200, 250]
    with pytest.raises(CodecError, match=r"'c/1'.*300\.0 is out of range of dtype uint8"):
        arr[4] = 13.0  # (13 - 10) * 100 is past uint8 and out_of_range is absent
    with pytest.raises(CodecError, match=r"'c/1'.*NaN has no uint8 value"):
        arr[3] = np.nan
    assert (path / "c" / "1").read_bytes() == before
    assert arr[:].tolist() == [10.0, 10.5, 11.0, 11.5, 12.0, 12.5]
