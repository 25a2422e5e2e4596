"""Arguments in the forms zarr-python and numpy take them: a value numpy would store is
stored (Python ints beyond 64 bits into floats, `str` objects into a variable-length
string array); a chunk key encoding as zarr-python's object, a dict or a name. What no
array can be (a shape of floats or bools, a data type of no bytes) is refused with an
aiozarr error before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.errors import MetadataError, ValueOutOfRangeError
from aiozarr.storage.backends.memory import MemoryStore


def test_python_ints_beyond_64_bits_into_a_float_array() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype="f8")
    arr[:] = 2**64
    np.testing.assert_array_equal(arr[:], np.full(2, 2.0**64))
    arr[:] = [2**70, -(2**80)]
    np.testing.assert_array_equal(arr[:], [2.0**70, -(2.0**80)])
    with pytest.raises(ValueOutOfRangeError, match="out of range: float64 holds"):
        arr[:] = [1, 10**400]
    small = aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype="f4")
    with pytest.raises(ValueOutOfRangeError, match="float32 holds"):
        small[:] = 2**200
    np.testing.assert_array_equal(arr[:], [2.0**70, -(2.0**80)])  # refused: nothing written


def test_str_objects_into_a_variable_length_string_array() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(3,), chunks=(2,), dtype=str)
    arr[:] = np.array(["a", "bb", "c"], dtype=object)  # what v2 string reads give
    assert arr[:].tolist() == ["a", "bb", "c"]
    with pytest.raises(aiozarr.errors.InvalidValueError, match="cannot cast object"):
        arr[:] = np.array(["a", 1, "c"], dtype=object)  # numpy would store "1"
    assert arr[:].tolist() == ["a", "bb", "c"]


@pytest.mark.parametrize("shape", [(3.7, 4), ("4", 4), (True, 4), (-1, 4), (3,)])
def test_resize_takes_only_integer_sizes(shape: Any) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(4, 4), chunks=(2, 2), dtype="i4")
    arr[:] = np.arange(16).reshape(4, 4)
    with pytest.raises(MetadataError, match="cannot resize"):
        arr.resize(shape)
    assert arr.shape == (4, 4)
    np.testing.assert_array_equal(arr[:], np.arange(16).reshape(4, 4))
    arr.resize((np.int64(5), 4))
    assert arr.shape == (5, 4)


@pytest.mark.parametrize("dtype", [bytes, "S0", "U0", "V0"])
def test_a_data_type_of_no_bytes_is_refused(tmp_path: Path, dtype: Any) -> None:
    with pytest.raises(MetadataError, match="holds no bytes"):
        aiozarr.create_array(tmp_path / "a", shape=(3,), chunks=(2,), dtype=dtype)
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    ("zarr_format", "encoding", "keys"),
    [
        (2, {"name": "v2", "separator": "/"}, {"0/0", "0/1", "1/0", "1/1"}),
        (3, {"name": "v2", "configuration": {"separator": "."}}, {"0.0", "0.1", "1.0", "1.1"}),
        (3, "v2", {"0.0", "0.1", "1.0", "1.1"}),
        (3, {"name": "default", "separator": "."}, {"c.0.0", "c.0.1", "c.1.0", "c.1.1"}),
    ],
)
def test_chunk_key_encoding_as_zarr_python_takes_it(
    tmp_path: Path, zarr_format: int, encoding: Any, keys: set[str]
) -> None:
    arr = aiozarr.create_array(
        tmp_path / "a",
        shape=(4, 4),
        chunks=(2, 2),
        dtype="i4",
        zarr_format=zarr_format,
        chunk_key_encoding=encoding,
    )
    arr[:] = 1
    stored = {p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a").rglob("*")}
    assert keys <= stored
    assert zarr.open_array(str(tmp_path / "a"), mode="r")[:].sum() == 16


def test_zarr_pythons_chunk_key_encoding_object(tmp_path: Path) -> None:
    encodings = pytest.importorskip("zarr.core.chunk_key_encodings")
    arr = aiozarr.create_array(
        tmp_path / "a",
        shape=(4,),
        chunks=(2,),
        dtype="i4",
        chunk_key_encoding=encodings.V2ChunkKeyEncoding(separator="/"),
    )
    arr[:] = 1
    assert {"0", "1"} <= {p.name for p in (tmp_path / "a").iterdir()}


@pytest.mark.parametrize("encoding", [{"name": "default"}, {"name": "bogus"}, {"separator": 1}])
def test_a_chunk_key_encoding_it_cannot_use_is_refused(tmp_path: Path, encoding: Any) -> None:
    with pytest.raises(aiozarr.errors.AiozarrError, match="chunk_key_encoding"):
        aiozarr.create_array(
            tmp_path / "a",
            shape=(4,),
            chunks=(2,),
            dtype="i4",
            zarr_format=2,
            chunk_key_encoding=encoding,
        )
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("U3", "abcdef"),
        ("U3", ["ab", "abcd"]),
        ("S2", b"abc"),
        ("U3", np.array(["ab", "abcd"], dtype="U4")),
    ],
)
def test_strings_longer_than_a_fixed_width_type_are_refused(dtype: str, value: Any) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype)
    with pytest.raises(ValueOutOfRangeError, match="characters is out of range"):
        arr[:] = value
    with pytest.raises(ValueOutOfRangeError, match="fill_value"):
        aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype, fill_value=value)
    arr[:] = np.array(["ab", "c"], dtype=dtype)  # what fits is stored
    assert arr[:].tolist() == np.array(["ab", "c"], dtype=dtype).tolist()
