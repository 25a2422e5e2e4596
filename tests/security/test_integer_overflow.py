"""Integers that do not fit an integer array are refused, never wrapped.

numpy's casts wrap: 2**40 into int32 is 0, -1 into uint8 is 255, 300 is 44. Every write
(`arr[...] = v`, each `set_*_selection`, `append`, `create_array(data=)`) and every fill
value refuses such a value with `ValueOutOfRangeError` (an `InvalidValueError` and an
`OverflowError`) naming the value and the data type, and leaves the store as it was.
Stores: a local directory and the S3 emulator.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.security.written import snapshot

import aiozarr
from aiozarr.errors import InvalidValueError, MetadataError, ValueOutOfRangeError
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.protocol import Store


def _refused(call: Callable[[], Any], *shown: str) -> ValueOutOfRangeError:
    with pytest.raises(ValueOutOfRangeError) as info:
        call()
    error = info.value
    assert isinstance(error, InvalidValueError) and isinstance(error, OverflowError)
    for text in shown:
        assert text in str(error), str(error)
    return error


# (dtype, a value that does not fit, what the message shows of it)
SCALARS = [
    ("int32", 2**40, "1099511627776"),
    ("uint8", -1, "-1"),
    ("uint8", 300, "300"),
    ("int8", 128, "128"),
    ("int8", -129, "-129"),
    ("int16", np.int64(40_000), "40000"),
    ("uint16", np.int8(-1), "-1"),
    ("int64", 2**63, "9223372036854775808"),
    ("int64", -(2**63) - 1, "-9223372036854775809"),
    ("uint64", -1, "-1"),
    ("uint64", 2**64, "18446744073709551616"),
]


@pytest.mark.parametrize(("dtype", "value", "shown"), SCALARS)
def test_scalar_out_of_range_is_refused_by_every_write(
    store: Store, dtype: str, value: Any, shown: str
) -> None:
    arr = aiozarr.create_array(store, "a", shape=(4, 4), dtype=dtype, chunks=(2, 2))
    arr[:] = np.arange(16, dtype=dtype).reshape(4, 4)
    before = snapshot(store)
    mask = np.zeros((4, 4), dtype=bool)
    mask[1, 2] = True
    writes: list[Callable[[], Any]] = [
        lambda: arr.__setitem__((0, 0), value),
        lambda: arr.__setitem__(..., value),
        lambda: arr.set_basic_selection((slice(0, 2), 1), value),
        lambda: arr.set_orthogonal_selection(([0, 2], [1, 3]), value),
        lambda: arr.oindex.__setitem__(([0, 2], slice(None)), value),
        lambda: arr.set_coordinate_selection(([0, 3], [1, 2]), value),
        lambda: arr.vindex.__setitem__(([0, 3], [1, 2]), value),
        lambda: arr.set_vectorized_selection(([0, 3], [1, 2]), value),
        lambda: arr.set_mask_selection(mask, value),
        lambda: arr.set_block_selection((1, 0), value),
        lambda: arr.blocks.__setitem__((0, 1), value),
        lambda: arr.append(np.full((2, 4), value, dtype=object)),
    ]
    for write in writes:
        _refused(write, shown, np.dtype(dtype).name)
        assert snapshot(store) == before
    assert arr.shape == (4, 4)
    assert aiozarr.open_array(store, "a").shape == (4, 4)


@pytest.mark.parametrize(
    ("dtype", "values", "shown"),
    [
        ("int8", np.array([1, 2, 200], dtype="uint64"), "200"),
        ("int8", [0, -1, 2**40], "1099511627776"),
        ("uint8", np.array([-3, 5], dtype="int16"), "-3"),
        ("uint32", [[0, 1], [2, -7]], "-7"),
        ("int64", np.array([2**63, 1], dtype="uint64"), "9223372036854775808"),
        ("uint64", [1, 2**64], "18446744073709551616"),
        ("int32", np.array([2**31], dtype="int64"), "2147483648"),
    ],
)
def test_integer_arrays_out_of_range_are_refused(
    store: Store, dtype: str, values: Any, shown: str
) -> None:
    shape = np.shape(values)
    arr = aiozarr.create_array(store, "a", shape=shape, dtype=dtype, chunks=(1,) * len(shape))
    before = snapshot(store)
    error = _refused(lambda: arr.__setitem__(..., values), shown, np.dtype(dtype).name)
    info = np.iinfo(dtype)
    assert str(info.min) in str(error) and str(info.max) in str(error)
    assert snapshot(store) == before
    _refused(lambda: arr.append(values), shown)
    assert snapshot(store) == before and arr.shape == np.shape(values)


def test_create_array_with_data_out_of_range_writes_nothing(store: Store) -> None:
    _refused(
        lambda: aiozarr.create_array(store, "d", data=np.array([1, 300]), dtype="uint8"),
        "300",
        "uint8",
    )
    _refused(
        lambda: aiozarr.create_array(store, "d", data=[2**64], dtype="uint64"),
        "18446744073709551616",
    )
    assert snapshot(store) == {}


@pytest.mark.parametrize(
    ("dtype", "fill", "shown"),
    [
        ("uint8", 300, "300"),
        ("uint8", -1, "-1"),
        ("int8", np.int64(300), "300"),
        ("uint8", 256.0, "256"),
        ("uint64", 2**64, "18446744073709551616"),
        ("int64", 2**63, "9223372036854775808"),
    ],
)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_fill_value_out_of_range_is_refused(
    store: Store, dtype: str, fill: Any, shown: str, zarr_format: int
) -> None:
    _refused(
        lambda: aiozarr.create_array(
            store, "f", shape=(4,), dtype=dtype, fill_value=fill, zarr_format=zarr_format
        ),
        shown,
        np.dtype(dtype).name,
    )
    assert snapshot(store) == {}


@pytest.mark.parametrize(
    ("zarr_format", "key", "document"),
    [
        (3, "zarr.json", {"data_type": "uint8", "fill_value": 300}),
        (3, "zarr.json", {"data_type": "int64", "fill_value": 2**63}),
        (2, ".zarray", {"dtype": "|u1", "fill_value": -1}),
        (2, ".zarray", {"dtype": "<u8", "fill_value": 2**64}),
    ],
)
def test_stored_fill_value_out_of_range_is_refused(
    tmp_path: Path, zarr_format: int, key: str, document: dict[str, Any]
) -> None:
    """A metadata document whose fill value does not fit its data type is refused."""
    store = LocalStore(tmp_path / "doc.zarr")
    aiozarr.create_array(store, shape=(2,), dtype="u1", zarr_format=zarr_format)
    path = tmp_path / "doc.zarr" / key
    meta = json.loads(path.read_text())
    meta.update(document)
    path.write_text(json.dumps(meta))
    with pytest.raises(MetadataError, match="fill_value") as info:
        aiozarr.open_array(store)
    assert str(document["fill_value"]) in str(info.value)


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("int8", np.array([1, 2, 3], dtype="int64")),
        ("int8", np.array([-128, 127], dtype="int64")),
        ("uint8", np.array([0, 255], dtype="uint64")),
        ("int64", np.array([2**63 - 1, 0], dtype="uint64")),
        ("uint64", [2**64 - 1, 0]),
        ("int64", [-(2**63), 2**63 - 1]),
        ("uint16", np.array([True, False])),
        ("float32", np.array([2**40, -1], dtype="int64")),  # ints into floats: as numpy
    ],
)
def test_integers_that_fit_are_stored_exactly(store: Store, dtype: str, values: Any) -> None:
    expected = np.array(values, dtype=object).astype(dtype)  # exact: no float64 on the way
    arr = aiozarr.create_array(store, "ok", shape=np.shape(values), dtype=dtype, chunks=1)
    arr[:] = values
    assert np.array_equal(arr[:], expected)
    arr.append(values)
    assert np.array_equal(arr[len(values) :], expected)
    again = aiozarr.create_array(store, "data", data=values, dtype=dtype)
    assert np.array_equal(again[:], expected)


def test_fill_values_at_the_edges_are_kept(tmp_path: Path) -> None:
    for i, (dtype, fill) in enumerate(
        [("uint8", 255), ("int8", -128), ("uint64", 2**64 - 1), ("int64", -(2**63))]
    ):
        arr = aiozarr.create_array(tmp_path / f"{i}.zarr", shape=(2,), dtype=dtype, fill_value=fill)
        assert int(aiozarr.open_array(tmp_path / f"{i}.zarr").fill_value) == fill
        assert arr[:].tolist() == [fill, fill]


def test_ints_into_bool_arrays_are_refused(tmp_path: Path) -> None:
    """Not an overflow: an int is no bool (numpy would store 2 as True); a bool is taken."""
    arr = aiozarr.create_array(tmp_path / "b.zarr", shape=(2,), dtype=bool)
    with pytest.raises(InvalidValueError, match="bool"):
        arr[0] = 2
    arr[0] = True
    assert arr[:].tolist() == [True, False]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (np.array([2**64 - 1, 1], dtype="uint64"), "18446744073709551615"),  # numpy: -1
        (2**63, "9223372036854775808"),  # numpy: NaT
    ],
)
@pytest.mark.parametrize("dtype", ["m8[s]", ">m8[ns]"])
def test_integers_into_timedelta_arrays_are_refused_past_64_bits(
    tmp_path: Path, dtype: str, value: Any, shown: str
) -> None:
    """Integers are counts of a timedelta's unit, numpy's cast wraps those past int64."""
    store = LocalStore(tmp_path / "t.zarr")
    arr = aiozarr.create_array(store, shape=(2,), chunks=(1,), dtype=dtype)
    before = snapshot(store)
    _refused(lambda: arr.__setitem__(..., value), shown, "int64")
    _refused(lambda: arr.append(np.broadcast_to(value, (2,))), shown)
    _refused(
        lambda: aiozarr.create_array(
            tmp_path / "f.zarr", shape=(2,), dtype=dtype, fill_value=value
        ),
        shown,
    )
    assert snapshot(store) == before and arr.shape == (2,)
    arr[:] = np.array([2**63 - 1, -5])
    assert arr[:].astype(np.int64).tolist() == [2**63 - 1, -5]


_INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    target=st.sampled_from(_INT_DTYPES),
    source=st.sampled_from([*_INT_DTYPES, "python"]),
    data=st.data(),
)
def test_a_write_stores_exactly_or_is_refused(target: str, source: str, data: Any) -> None:
    """Any integers of any integer dtype (or Python ints) into any integer array: either
    every value reads back equal, or the write is refused and nothing changed."""
    if source == "python":
        values: Any = data.draw(st.lists(st.integers(-(2**65), 2**65), min_size=1, max_size=6))
    else:
        info = np.iinfo(source)
        ints = st.integers(int(info.min), int(info.max))
        values = np.array(data.draw(st.lists(ints, min_size=1, max_size=6)), dtype=source)
    arr = aiozarr.create_array(aiozarr.storage.MemoryStore(), shape=(6,), dtype=target, chunks=2)
    info = np.iinfo(target)
    fits = all(info.min <= int(v) <= info.max for v in values)
    n = len(values)
    if fits:
        arr[:n] = values
        assert [int(v) for v in arr[:n]] == [int(v) for v in values]
    else:
        with pytest.raises(ValueOutOfRangeError):
            arr[:n] = values
        assert arr[:].tolist() == [0] * 6
