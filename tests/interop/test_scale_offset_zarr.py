"""`scale_offset` against zarr-python 3.4's (the first writer of it): the same stored
values and the same refusals for the same chunks, by property; arrays written by each,
read by the other, sharded and not; and through `aiozarr.zarr.CodecPipeline` without
falling back. Skipped where zarr-python has no `scale_offset` (before 3.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

scale_offset = pytest.importorskip("zarr.codecs.scale_offset")

import zarr  # noqa: E402
from tests.interop.codec_calls import aiozarr_call, zarr_call  # noqa: E402
from zarr.core.dtype import parse_dtype  # noqa: E402

import aiozarr  # noqa: E402
from aiozarr.codecs import ChunkSpec  # noqa: E402
from aiozarr.codecs.scale_offset import ScaleOffsetCodec  # noqa: E402
from aiozarr.errors import CodecError, MetadataError  # noqa: E402

DTYPES = ["int8", "uint8", "int16", "uint32", "int64", "uint64", "float16", "float32", "float64"]


@st.composite
def _cases(draw: Any) -> tuple[np.ndarray, Any, Any]:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    if dtype.kind == "f":
        finite = {"allow_nan": False, "allow_infinity": False, "width": dtype.itemsize * 8}
        offset: Any = draw(st.floats(-1e3, 1e3, **finite))
        scale: Any = draw(st.sampled_from([0.5, 0.1, 2.0, -4.0, 1e-3, 3.0]))
    else:
        info = np.iinfo(dtype)
        scalars = st.one_of(st.integers(-4, 4), st.integers(int(info.min), int(info.max)))
        offset = draw(scalars.filter(lambda v: info.min <= v <= info.max))
        scale = draw(scalars.filter(lambda v: v != 0 and info.min <= v <= info.max))
    values = draw(hnp.arrays(dtype, st.integers(1, 6)))
    return values, offset, scale


def _wraps_int64(values: np.ndarray, method: str, offset: int, scale: int) -> bool:
    """Whether the exact result leaves int64 (zarr-python 3.4.2 computes int64 in int64
    and wraps such a value silently, where the spec asks for an error; aiozarr refuses)."""
    if values.dtype != np.int64:
        return False
    info = np.iinfo(np.int64)
    if method == "encode":
        exact = [(int(v) - offset) * scale for v in values]
    else:
        exact = [int(v) // scale + offset for v in values]
    return any(not info.min <= e <= info.max for e in exact)


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(_cases())
def test_encode_and_decode_are_zarr_pythons(case: tuple[np.ndarray, Any, Any]) -> None:
    values, offset, scale = case
    theirs = scale_offset.ScaleOffset(offset=offset, scale=scale)
    ours = ScaleOffsetCodec(offset=offset, scale=scale)
    ours.validate(ChunkSpec(values.shape, values.dtype, 0))
    for method, zarr_method in (("encode", "_encode_sync"), ("decode", "_decode_sync")):
        mine, expected = aiozarr_call(ours, method, values), zarr_call(theirs, zarr_method, values)
        if _wraps_int64(values, method, offset, scale):
            assert isinstance(mine, CodecError), (method, mine)
        elif isinstance(expected, Exception):
            assert isinstance(mine, Exception), (method, mine, expected)
        else:
            assert not isinstance(mine, Exception), (method, mine)
            assert mine.dtype == expected.dtype
            np.testing.assert_array_equal(mine, expected)


CODECS = {"offset": 1000, "scale": 4}


def _zarr_array(path: Path, shards: Any) -> Any:
    return zarr.create_array(
        zarr.storage.LocalStore(path),
        shape=(10, 6),
        chunks=(3, 2),
        shards=shards,
        dtype="int32",
        fill_value=1001,
        filters=[scale_offset.ScaleOffset(**CODECS)],
    )


DATA = (np.arange(60, dtype="int32").reshape(10, 6) * 7) - 100


@pytest.mark.parametrize("shards", [None, (6, 4)])
def test_zarr_python_writes_aiozarr_reads(tmp_path: Path, shards: Any) -> None:
    z = _zarr_array(tmp_path / "z.zarr", shards)
    z[:8] = DATA[:8]
    got = aiozarr.open_array(str(tmp_path / "z.zarr"))
    expected = DATA.copy()
    expected[8:] = 1001
    np.testing.assert_array_equal(got[:], expected)
    np.testing.assert_array_equal(got[[9, 0, 4], 1:5], expected[[9, 0, 4], 1:5])


@pytest.mark.parametrize("shards", [None, (6, 4)])
def test_aiozarr_writes_zarr_python_reads(tmp_path: Path, shards: Any) -> None:
    path = str(tmp_path / "a.zarr")
    ours = aiozarr.create_array(
        path,
        shape=(10, 6),
        chunks=(3, 2),
        shards=shards,
        dtype="int32",
        fill_value=1001,
        filters=[{"name": "scale_offset", "configuration": CODECS}],
    )
    ours[:8] = DATA[:8]
    expected = DATA.copy()
    expected[8:] = 1001
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], expected)
    # the stored values are zarr-python's: (x - 1000) * 4
    theirs = _zarr_array(tmp_path / "z.zarr", shards)
    theirs[:8] = DATA[:8]
    for key in ("c/0/0", "c/1/1"):
        assert (tmp_path / "a.zarr" / key).read_bytes() == (tmp_path / "z.zarr" / key).read_bytes()


def test_a_configuration_zarr_python_refuses_aiozarr_refuses() -> None:
    with pytest.raises(ValueError, match="non-zero"):
        scale_offset.ScaleOffset(offset=0, scale=0).validate(
            shape=(4,), dtype=parse_dtype("int8", zarr_format=3), chunk_grid=None
        )
    with pytest.raises(MetadataError, match="must not be 0"):
        ScaleOffsetCodec(offset=0, scale=0).validate(ChunkSpec((4,), np.dtype("int8"), 0))


def test_the_pipeline_reads_and_writes_it_without_falling_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import aiozarr.zarr  # registers the pipeline

    caplog.set_level("DEBUG", logger="aiozarr.zarr")
    with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
        z = _zarr_array(tmp_path / "z.zarr", (6, 4))
        z[:8] = DATA[:8]
        z.vindex[[9, 0], [5, 1]] = [-3, 5]
        got = z[:]
    expected = DATA.copy()
    expected[8:] = 1001
    expected[9, 5], expected[0, 1] = -3, 5
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(aiozarr.open_array(str(tmp_path / "z.zarr"))[:], expected)
    assert not [r for r in caplog.records if "falls back" in r.getMessage()]


def test_before_the_sharding_codec_inner_chunks_are_still_read_alone(tmp_path: Path) -> None:
    # zarr-python puts `filters` before a `serializer=ShardingCodec(...)`: the codec then
    # encodes whole shards, and each inner chunk is still one range
    path = tmp_path / "z.zarr"
    z = zarr.create_array(
        zarr.storage.LocalStore(path),
        shape=(10, 6),
        chunks=(10, 6),
        dtype="int32",
        fill_value=1001,
        filters=[scale_offset.ScaleOffset(**CODECS)],
        serializer=zarr.codecs.ShardingCodec(chunk_shape=(2, 3)),
        compressors=None,
    )
    z[:8] = DATA[:8]
    ours = aiozarr.open_array(str(path))
    assert (ours.chunks, ours.shards) == ((2, 3), (10, 6))
    expected = DATA.copy()
    expected[8:] = 1001
    np.testing.assert_array_equal(ours[:], expected)
    ours[9, 1:4] = [7, 8, 9]
    expected[9, 1:4] = [7, 8, 9]
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], expected)
