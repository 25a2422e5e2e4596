"""`cast_value` against zarr-python 3.4's (the first writer of it, casting with the
`cast-value-rs` package): the same values and the same refusals for the same chunks, by
property; arrays of `[scale_offset, cast_value]` written by each, read by the other,
sharded and not, with the same stored bytes; and through `aiozarr.zarr.CodecPipeline`
without falling back. Skipped without zarr-python's codec or its backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

cast_value = pytest.importorskip("zarr.codecs.cast_value")
pytest.importorskip("cast_value_rs")

import zarr  # noqa: E402
from tests.interop.codec_calls import aiozarr_call, zarr_call  # noqa: E402
from zarr.codecs.scale_offset import ScaleOffset  # noqa: E402

import aiozarr  # noqa: E402
from aiozarr.codecs import get_codec  # noqa: E402
from aiozarr.codecs.cast_value import ROUNDINGS, CastValueCodec  # noqa: E402
from aiozarr.errors import CodecError  # noqa: E402

INTEGERS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]


def _values(draw: Any, dtype: np.dtype[Any]) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        ints = st.one_of(st.integers(-300, 300), st.integers(int(info.min), int(info.max)))
        ints = ints.map(lambda n: n if info.min <= n <= info.max else n % 100)
        return np.array(draw(st.lists(ints, min_size=1, max_size=6)), dtype=dtype)
    floats = st.one_of(
        st.integers(-600, 600).map(lambda n: n / 2),
        st.floats(-1e5, 1e5),
        st.floats(),
        st.sampled_from([65504.0, 65519.0, 65520.0, 70000.0, 255.5, -128.5, 1e-40, 3.5e38]),
    )
    with np.errstate(over="ignore"):
        return np.array(draw(st.lists(floats, min_size=1, max_size=6)), dtype=dtype)


@st.composite
def _cases(draw: Any) -> tuple[np.ndarray, str, str, Any]:
    source = np.dtype(draw(st.sampled_from(INTEGERS + FLOATS)))
    target = draw(st.sampled_from(INTEGERS + FLOATS))
    modes = [None, "clamp", "wrap"] if target[0] in "iu" else [None, "clamp"]
    return (
        _values(draw, source),
        target,
        draw(st.sampled_from(ROUNDINGS)),
        draw(st.sampled_from(modes)),
    )


def _known_difference(values: np.ndarray, target: np.dtype[Any], out_of_range: Any) -> bool:
    """Where aiozarr and zarr-python 3.4.2 (cast-value-rs 0.5) differ on purpose: ±inf
    into an integer with "clamp" is the integer's end (the spec: ±inf is out of range of
    finite types; cast-value-rs refuses it), and 64-bit integers past 2**53 into a float
    are rounded once, exactly (cast-value-rs rounds them through float64 first: two
    roundings). tests/codecs/test_cast_value.py holds both against the exact model."""
    if values.dtype.kind == "f" and target.kind in "iu" and out_of_range == "clamp":
        return bool(np.isinf(values).any())
    if values.dtype.kind in "iu" and values.dtype.itemsize == 8 and target.kind == "f":
        return bool(((values > 2**53) | (values < -(2**53))).any())
    return False


def _equal(mine: Any, expected: Any) -> None:
    assert not isinstance(mine, Exception), mine
    assert mine.dtype == expected.dtype
    np.testing.assert_array_equal(mine, expected)
    assert np.signbit(mine).tolist() == np.signbit(expected).tolist()  # zeros and NaNs too


@settings(max_examples=800, derandomize=True, database=None, deadline=None)
@given(_cases())
def test_encode_and_decode_are_zarr_pythons(case: tuple[np.ndarray, str, str, Any]) -> None:
    values, target, rounding, out_of_range = case
    source = values.dtype
    config = {"rounding": rounding, "out_of_range": out_of_range}
    theirs = cast_value.CastValue(data_type=target, **config)
    ours = get_codec({"name": "cast_value", "configuration": {"data_type": target, **config}})
    checks = [(ours, theirs, "encode", "_encode_sync", np.dtype(target), source)]
    if out_of_range != "wrap" or source.kind in "iu":  # decode: values stored as `source`
        back = {"data_type": source.name, **config}
        checks.append(
            (
                get_codec({"name": "cast_value", "configuration": back}),
                cast_value.CastValue(**back),
                "decode",
                "_decode_sync",
                np.dtype(target),
                np.dtype(target),
            )
        )
    for mine_codec, zarr_codec, method, zarr_method, to, spec_dtype in checks:
        assert isinstance(mine_codec, CastValueCodec)
        mine = aiozarr_call(mine_codec, method, values, spec_dtype)
        expected = zarr_call(zarr_codec, zarr_method, values, spec_dtype)
        if _known_difference(values, to, out_of_range):
            continue
        if isinstance(expected, Exception):
            assert isinstance(mine, CodecError), (method, mine, expected)
        else:
            _equal(mine, expected)


@st.composite
def _mapped(draw: Any) -> tuple[np.ndarray, str, dict[str, Any]]:
    source = draw(st.sampled_from(["float64", "float32", "int16", "uint8"]))
    target = draw(st.sampled_from(["uint8", "int8", "int16", "float32", "float16"]))
    if source.startswith("float"):
        pool: list[Any] = ["NaN", "Infinity", 1.5, -0.0, 2.0]
        values = draw(st.lists(st.sampled_from([1.5, -0.0, 0.0, 2.0, 3.0, np.nan, np.inf])))
    else:
        pool = [0, 1, 2, 3]
        values = draw(st.lists(st.integers(0, 5)))
    keys = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    stored = draw(st.lists(st.integers(0, 100), min_size=len(keys), max_size=len(keys)))
    scalar_map = {
        "encode": [[k, v] for k, v in zip(keys, stored, strict=True)],
        "decode": [[stored[0], keys[0]]],
    }
    config = {"data_type": target, "out_of_range": "clamp", "scalar_map": scalar_map}
    return np.array(values, dtype=source), source, config


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(_mapped())
def test_scalar_map_is_zarr_pythons(case: tuple[np.ndarray, str, dict[str, Any]]) -> None:
    values, source, config = case
    if values.dtype.kind == "f" and np.isinf(values).any() and config["data_type"][0] in "iu":
        values = np.where(np.isinf(values), 0, values).astype(values.dtype)  # see above
    ours = get_codec({"name": "cast_value", "configuration": config})
    assert isinstance(ours, CastValueCodec)
    theirs = cast_value.CastValue(**config)
    encoded, expected = (
        aiozarr_call(ours, "encode", values, source),
        zarr_call(theirs, "_encode_sync", values, source),
    )
    if isinstance(expected, Exception):  # NaN left unmapped into an integer
        assert isinstance(encoded, CodecError), encoded
        return
    _equal(encoded, expected)
    _equal(
        aiozarr_call(ours, "decode", encoded, source),
        zarr_call(theirs, "_decode_sync", encoded, source),
    )


def test_a_configuration_zarr_python_writes_is_read_alike() -> None:
    theirs = cast_value.CastValue(
        data_type="uint8",
        rounding="towards-zero",
        out_of_range="clamp",
        scalar_map={"encode": [("NaN", 0)], "decode": [(0, "NaN")]},
    ).to_dict()
    import json

    doc = json.loads(json.dumps(theirs))  # as stored: tuples become lists
    ours = get_codec(doc)
    assert ours.to_metadata().to_json() == doc


SCALE_OFFSET = {"offset": 10, "scale": 100}
DATA = np.round(np.linspace(10.0, 12.5, 60), 2).reshape(10, 6)
EXPECTED = DATA.copy()
EXPECTED[8:] = 10.0


def _expected() -> np.ndarray:
    """What the codecs store and read back: float64 scale_offset, rounded half to even."""
    return np.rint((EXPECTED - 10.0) * 100.0) / 100.0 + 10.0


def _zarr_array(path: Path, shards: Any, out_of_range: Any = "clamp") -> Any:
    # "clamp": zarr-python 3.4.2 checks the codecs inside a shard with a fill value of 0
    # (not the array's), which scale_offset turns into -1000: out of uint8's range
    cast = {"out_of_range": out_of_range}
    return zarr.create_array(
        zarr.storage.LocalStore(path),
        shape=(10, 6),
        chunks=(3, 2),
        shards=shards,
        dtype="float64",
        fill_value=10.0,
        filters=[ScaleOffset(**SCALE_OFFSET), cast_value.CastValue(data_type="uint8", **cast)],
    )


@pytest.mark.parametrize("shards", [None, (6, 4)])
def test_zarr_python_writes_aiozarr_reads(tmp_path: Path, shards: Any) -> None:
    z = _zarr_array(tmp_path / "z.zarr", shards)
    z[:8] = DATA[:8]
    got = aiozarr.open_array(str(tmp_path / "z.zarr"))
    np.testing.assert_array_equal(got[:], _expected())
    np.testing.assert_array_equal(got[:], z[:])
    np.testing.assert_array_equal(got[[9, 0, 4], 1:5], _expected()[[9, 0, 4], 1:5])


@pytest.mark.parametrize("shards", [None, (6, 4)])
def test_aiozarr_writes_zarr_python_reads_the_same_bytes(tmp_path: Path, shards: Any) -> None:
    path = str(tmp_path / "a.zarr")
    filters = [
        {"name": "scale_offset", "configuration": SCALE_OFFSET},
        {"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "clamp"}},
    ]
    ours = aiozarr.create_array(
        path,
        shape=(10, 6),
        chunks=(3, 2),
        shards=shards,
        dtype="float64",
        fill_value=10.0,
        filters=filters,
    )
    ours[:8] = DATA[:8]
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], _expected())
    theirs = _zarr_array(tmp_path / "z.zarr", shards)
    theirs[:8] = DATA[:8]
    stored = sorted(p.relative_to(tmp_path / "z.zarr") for p in (tmp_path / "z.zarr/c").rglob("*"))
    assert stored == sorted(
        p.relative_to(tmp_path / "a.zarr") for p in (tmp_path / "a.zarr/c").rglob("*")
    )
    for key in stored:
        if (tmp_path / "z.zarr" / key).is_file():
            assert (tmp_path / "a.zarr" / key).read_bytes() == (
                tmp_path / "z.zarr" / key
            ).read_bytes()


@pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec:UserWarning")
def test_before_the_sharding_codec_each_writes_what_the_other_reads(tmp_path: Path) -> None:
    # zarr-python puts `filters` before a `serializer=ShardingCodec(...)`: the casts then
    # encode whole shards, and each inner chunk is still one range
    path = tmp_path / "z.zarr"
    z = zarr.create_array(
        zarr.storage.LocalStore(path),
        shape=(10, 6),
        chunks=(10, 6),
        dtype="float64",
        fill_value=10.0,
        filters=[ScaleOffset(**SCALE_OFFSET), cast_value.CastValue(data_type="uint8")],
        serializer=zarr.codecs.ShardingCodec(chunk_shape=(2, 3)),
        compressors=None,
    )
    z[:8] = DATA[:8]
    ours = aiozarr.open_array(str(path))
    assert (ours.chunks, ours.shards) == ((2, 3), (10, 6))
    np.testing.assert_array_equal(ours[:], _expected())
    ours[9, 1:4] = [10.5, 11.0, 12.5]
    expected = _expected()
    expected[9, 1:4] = [10.5, 11.0, 12.5]
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], expected)


def test_scalar_map_written_by_zarr_python_is_read(tmp_path: Path) -> None:
    path = tmp_path / "z.zarr"
    z = zarr.create_array(
        zarr.storage.LocalStore(path),
        shape=(6,),
        chunks=(3,),
        dtype="float32",
        fill_value=0.0,
        filters=[
            cast_value.CastValue(
                data_type="int16",
                out_of_range="clamp",
                scalar_map={"encode": [("NaN", -1)], "decode": [(-1, "NaN")]},
            )
        ],
    )
    data = np.array([1.0, np.nan, 3.4, 1e9, -2.5, np.nan], dtype="float32")
    z[:] = data
    got = aiozarr.open_array(str(path))[:]
    np.testing.assert_array_equal(got, z[:])
    assert np.isnan(got[[1, 5]]).all() and got[3] == 32767.0


def test_the_pipeline_reads_and_writes_it_without_falling_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import aiozarr.zarr  # registers the pipeline

    caplog.set_level("DEBUG", logger="aiozarr.zarr")
    with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
        z = _zarr_array(tmp_path / "z.zarr", (6, 4))
        z[:8] = DATA[:8]
        z.vindex[[9, 0], [5, 1]] = [13.0, 10.25]
        got = z[:]
        with pytest.raises(ValueError, match="out of range"):
            _zarr_array(tmp_path / "y.zarr", None, None)[:] = 13.0  # no out_of_range: refused
    expected = _expected()
    expected[9, 5], expected[0, 1] = 12.55, 10.25  # 13.0 clamped to 255
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(aiozarr.open_array(str(tmp_path / "z.zarr"))[:], expected)
    assert not [r for r in caplog.records if "falls back" in r.getMessage()]


@pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec:UserWarning")
def test_a_fill_the_cast_loses_reads_as_zarr_python_reads_it(tmp_path: Path) -> None:
    # 0.3 cast to uint8 is 0: zarr-python leaves out inner chunks stored as 0 and reads
    # them (the sharding codec's fill) as 0.0, not 0.3
    path = tmp_path / "z.zarr"
    z = zarr.create_array(
        zarr.storage.LocalStore(path),
        shape=(12,),
        chunks=(8,),
        dtype="float64",
        fill_value=0.3,
        filters=[cast_value.CastValue(data_type="uint8", out_of_range="clamp")],
        serializer=zarr.codecs.ShardingCodec(chunk_shape=(2,)),
        compressors=None,
    )
    z[:8] = [0.1, 0.2, 5, 6, 0.4, 0.1, 7, 8]
    ours = aiozarr.open_array(str(path))
    np.testing.assert_array_equal(ours[:], z[:])  # the missing shard: 0.3 in both
    ours[2:4] = [0.3, 0.3]
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], ours[:])


@pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec:UserWarning")
def test_a_shard_that_casts_to_the_fill_reads_as_with_zarr_pythons_pipeline(
    tmp_path: Path,
) -> None:
    # 0.2 and 0.1 cast to uint8 are 0, the fill value 0.3 as encoded: zarr-python's
    # sharding codec stores no shard, which reads as 0.3; aiozarr's pipeline stored an
    # index-only shard, read as 0.0
    pytest.importorskip("aiozarr.zarr")  # registers the pipeline

    got = []
    for pipeline in ("zarr.core.codec_pipeline.BatchedCodecPipeline", "aiozarr.zarr.CodecPipeline"):
        with zarr.config.set({"codec_pipeline.path": pipeline}):
            z = zarr.create_array(
                zarr.storage.LocalStore(tmp_path / pipeline),
                shape=(8,),
                chunks=(4,),
                dtype="float64",
                fill_value=0.3,
                filters=[cast_value.CastValue(data_type="uint8", out_of_range="clamp")],
                serializer=zarr.codecs.ShardingCodec(chunk_shape=(2,)),
                compressors=None,
            )
            z[:2] = [0.2, 0.1]
            z[4:7] = [0.2, 1.6, 0.4]
            got.append(z[:])
    np.testing.assert_array_equal(got[0], [0.3] * 4 + [0.0, 2.0, 0.0, 0.0])
    np.testing.assert_array_equal(got[1], got[0])
