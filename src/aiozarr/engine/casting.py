"""How a value becomes an array's data type: the one conversion every write goes through
(`arr[...] = v`, each `set_*_selection`, `append`, `create_array(data=)`: all call
`AsyncArray._as_value`), and the check every integer fill value goes through.

numpy's casts wrap integers: 300 into `uint8` is 44, -1 is 255, 2**40 into `int32` is 0.
Here an integer outside the target's range is refused with `ValueOutOfRangeError` (an
`InvalidValueError` and an `OverflowError`), naming the value, or an array's least and
greatest values, and the data type's range. Integers that fit are taken from any integer
dtype (int64 `[1, 2, 3]` into `int8`), and from Python ints beyond 64 bits.

The rest is numpy's `same_kind` rule, with ints and bools also taken into floats: floats
into integer arrays are refused (they would truncate), ints into bool arrays too (2 is no
bool); floats are never range-checked (numpy gives inf where a float32 overflows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aiozarr.errors import ValueOutOfRangeError

__all__ = ["as_dtype", "check_integer_range"]


def as_dtype(value: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """`value` as an array of `dtype` (same shape; not broadcast).

    Raises `ValueOutOfRangeError` for integers that do not fit, `TypeError` for a value
    of another kind, and numpy's `ValueError` for one that does not convert at all; the
    caller names the array.
    """
    array = np.asarray(value)
    if array.dtype == dtype:
        return array
    if dtype.kind in "iu":
        array = _exact_integers(value, array)
        if array.dtype.kind in "iuO" and _all_integers(array):
            check_integer_range(array, dtype)
            return array.astype(dtype)
    if not np.can_cast(array.dtype, dtype, casting="same_kind") and not (
        array.dtype.kind in "iub" and dtype.kind in "iufc"
    ):
        raise TypeError(f"cannot cast {array.dtype} to {dtype}")
    return array.astype(dtype)


def _exact_integers(value: Any, array: np.ndarray) -> np.ndarray:
    """A list of ints as numpy reads it may hold floats (`[2**63, -1]` becomes float64,
    losing digits) or objects (ints beyond 64 bits): keep the ints themselves."""
    if array.dtype.kind not in "fO" or isinstance(value, np.ndarray | np.generic):
        return array
    try:
        exact = np.array(value, dtype=object)
    except (TypeError, ValueError):
        return array
    return exact if _all_integers(exact) else array


def _all_integers(array: np.ndarray) -> bool:
    if array.dtype.kind in "iu":
        return True
    return array.dtype.kind == "O" and all(isinstance(v, int | np.integer) for v in array.flat)


def check_integer_range(values: Any, dtype: np.dtype[Any], what: str = "") -> None:
    """Refuse integers (a scalar, or an array of an integer dtype or of Python ints) that
    `dtype` (an integer data type) cannot hold. `what` starts the message ("fill_value")."""
    array = np.asarray(values)
    if array.size == 0 or (array.dtype.kind in "iu" and np.can_cast(array.dtype, dtype, "safe")):
        return
    info = np.iinfo(dtype)
    if array.dtype.kind == "O":
        ints = [int(v) for v in array.flat]
        low, high = min(ints), max(ints)
    else:
        low, high = int(array.min()), int(array.max())
    if info.min <= low and high <= info.max:
        return
    name = np.dtype(dtype).name
    limits = f"{name} holds {info.min} to {info.max}"
    lead = f"{what} " if what else ""
    if array.size == 1:
        raise ValueOutOfRangeError(f"{lead}{low} is out of range: {limits}")
    raise ValueOutOfRangeError(f"{lead}values from {low} to {high} are out of range: {limits}")
