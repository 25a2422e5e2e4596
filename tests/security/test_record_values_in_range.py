"""Fields of a structured dtype take values by the rule every write takes them by: a
record whose field cannot hold its value is refused, never stored wrapped.

numpy converts records field by field with its own casts: 300 into an `int8` field is
44, 1e300 into a `float32` one is inf, year 3000 into a `datetime64[ns]` one is 1830,
and 300 in a sub-array or nested record of `uint8` raises a bare `OverflowError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.security.written import snapshot

import aiozarr
from aiozarr.errors import ValueOutOfRangeError
from aiozarr.storage.backends.local import LocalStore

RECORD = np.dtype([("a", "i1"), ("f", "<f4"), ("t", "<M8[ns]")])
WIDE = np.dtype([("a", "<i8"), ("f", "<f8"), ("t", "<M8[s]")])
YEAR_3000 = np.datetime64("3000-01-01", "s")
IN_RANGE = (1, 2.5, np.datetime64("2000-01-01", "s"))


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (np.array([IN_RANGE, (300, 0, 0)], dtype=WIDE), "300 is out of range"),
        (np.array([IN_RANGE, (1, 1e300, 0)], dtype=WIDE), r"1e\+300 is out of range"),
        (np.array([IN_RANGE, (1, 0, YEAR_3000)], dtype=WIDE), "3000-01-01"),
        ([IN_RANGE, (1, 0.0, YEAR_3000)], "3000-01-01"),
        ([IN_RANGE, (1, 0.0, "3000-01-01")], "3000-01-01"),
    ],
)
def test_records_a_field_cannot_hold_are_refused(tmp_path: Path, value: Any, shown: str) -> None:
    store = LocalStore(tmp_path / "r.zarr")
    arr = aiozarr.create_array(store, shape=(2,), chunks=(1,), dtype=RECORD, zarr_format=2)
    before = snapshot(store)
    with pytest.raises(ValueOutOfRangeError, match=shown):
        arr[:] = value
    assert snapshot(store) == before
    if isinstance(value, np.ndarray):
        with pytest.raises(ValueOutOfRangeError, match=shown):
            arr.append(value)
        assert snapshot(store) == before and arr.shape == (2,)
        with pytest.raises(ValueOutOfRangeError, match=shown):
            aiozarr.create_array(tmp_path / "d.zarr", data=value, dtype=RECORD)


@pytest.mark.parametrize(
    ("dtype", "element"),
    [([("s", "u1", (2,))], ([300, 1],)), ([("n", [("b", "u1")])], ((300,),))],
    ids=["sub-array", "nested"],
)
def test_sub_arrays_and_nested_records_are_checked(
    tmp_path: Path, dtype: Any, element: Any
) -> None:
    arr = aiozarr.create_array(tmp_path, shape=(2,), dtype=dtype, zarr_format=2)
    with pytest.raises(ValueOutOfRangeError, match="300 is out of range: uint8"):
        arr[:] = [element, element]
    assert arr.nchunks_initialized == 0


def test_a_record_fill_value_a_field_cannot_hold_is_refused(tmp_path: Path) -> None:
    for fill in [np.array((300, 0, 0), dtype=WIDE)[()], (1, 0.0, YEAR_3000)]:
        with pytest.raises(ValueOutOfRangeError, match="fill_value"):
            aiozarr.create_array(tmp_path, shape=(2,), dtype=RECORD, fill_value=fill)


def test_records_of_another_dtype_that_fit_are_stored_field_by_field(tmp_path: Path) -> None:
    """As numpy assigns records: by position, each field converted."""
    arr = aiozarr.create_array(tmp_path, shape=(2,), dtype=RECORD, zarr_format=2)
    value = np.array([IN_RANGE, (-128, -0.0, np.datetime64("NaT"))], dtype=WIDE)
    arr[:] = value
    expected = value.astype(RECORD)
    assert aiozarr.open_array(tmp_path)[:].tobytes() == expected.tobytes()
    arr[0] = (7, 1.5, "2001-02-03")
    expected[0] = (7, 1.5, np.datetime64("2001-02-03", "ns"))
    assert aiozarr.open_array(tmp_path)[:].tobytes() == expected.tobytes()
