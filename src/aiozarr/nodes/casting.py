"""How a value becomes an array's data type: the one conversion every write goes through
(`arr[...] = v`, each `set_*_selection`, `append`, `create_array(data=)`: all call
`AsyncArray._as_value`; dask blocks arrive through `arr[...] = v`), and the one every fill
value given to `create_array` goes through (`as_fill_value`).

numpy's casts give wrong values silently: 300 into `uint8` is 44, 2**40 into `int32` is
0, 1e300 into `float32` is inf, year 3000 in `datetime64[s]` into `datetime64[ns]` is
1830. Here a value the target cannot hold is refused with `ValueOutOfRangeError` (an
`InvalidValueError` and an `OverflowError`), naming the value, or an array's least and
greatest offending values, and the data type's range:

- integers outside the target integer type's range (from any integer dtype, and from
  Python ints beyond 64 bits; those that fit are taken exactly);
- finite numbers that overflow a float or complex type (inf and NaN given as such are
  kept; rounding to the nearest float, and underflow towards zero, are not refused);
- datetimes and timedeltas whose change to a finer unit leaves the 64-bit range (NaT
  stays NaT; a change to a coarser unit floors, as numpy does);
- strings longer than a fixed-width string type holds (numpy keeps the first characters),
  numbers, bools and dates counted by the text numpy makes of them (123 into `U2`).

Variable-length strings and bytes stored as objects (v2 `dtype=str`, v3
`variable_length_bytes`) take `as_items`: strings as v3's string type takes them, bytes
only as bytes. Bytes given for strings (a scalar, a list, an `S` or object array) are
the text they encode in UTF-8, as zarr-python takes them; bytes that are not UTF-8 are
refused.

The rest is numpy's `same_kind` rule, with ints and bools also taken into floats: floats
into integer arrays are refused (they would truncate), ints into bool arrays too (2 is no
bool). A fill value may be a whole-number float for an integer type (JSON writers give
0.0); a fractional one is refused as out of range; a bool's may be 0 or 1, not 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aiozarr.errors import ValueOutOfRangeError
from aiozarr.metadata.dtypes import string_dtype

__all__ = ["as_dtype", "as_fill_value", "as_items", "check_integer_range", "string_lengths"]

_NAT = np.iinfo(np.int64).min


def as_dtype(value: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """`value` as an array of `dtype` (same shape; not broadcast).

    Raises `ValueOutOfRangeError` for values `dtype` cannot hold, `TypeError` for a value
    of another kind, and numpy's `ValueError` for one that does not convert at all; the
    caller names the array.
    """
    if dtype.names is not None and isinstance(value, tuple | list):
        return _records(value, dtype)
    array = np.asarray(value)
    if array.dtype == dtype:
        return array
    if dtype.names is not None and array.dtype.names is not None:
        return _fields(array, dtype)
    if dtype.kind == "T":
        array = _decoded(array)
    if dtype.kind in "iu":
        array = _exact_integers(value, array)
        if array.dtype.kind in "iuO" and _all_integers(array):
            check_integer_range(array, dtype)
            return array.astype(dtype)
    if dtype.kind == "m" and array.dtype.kind in "iu":  # counts of its unit, in 64 bits
        check_integer_range(array, np.dtype(np.int64))
    if array.dtype.kind == "O":
        array = _from_objects(array, dtype)
        if array.dtype == dtype:
            return array
    if not np.can_cast(array.dtype, dtype, casting="same_kind") and not (
        array.dtype.kind in "iub" and dtype.kind in "iufc"
    ):
        raise TypeError(f"cannot cast {array.dtype} to {dtype}")
    if dtype.kind in "mM" and array.dtype.kind == dtype.kind:
        _check_time_range(array, dtype)
    if dtype.kind in "SU":
        _check_string_width(array, dtype)
    try:
        with np.errstate(over="ignore"):  # an overflow is refused below, not warned about
            result = array.astype(dtype)
    except OverflowError as error:  # numpy 2.5 and later, at the ends of a time range
        raise ValueOutOfRangeError(
            f"{array.dtype} values do not convert to {dtype}: {error}"
        ) from None
    if dtype.kind in "fc":
        _check_float_range(array, result)
    return result


def as_items(value: Any, items: type) -> np.ndarray:
    """`value` as an object array of `items` (`str` or `bytes`), the elements of
    variable-length strings or bytes: strings as `as_dtype` makes them for v3's string
    type (a number is its text; None and other objects are refused), bytes only as bytes.
    Raises `TypeError` naming the first element of another kind."""
    array = np.asarray(value)
    if items is bytes and not isinstance(value, np.ndarray):
        array = np.array(value, dtype=object)  # numpy's `S` would drop trailing NULs
    if items is str:
        array = _decoded(array)
    if array.dtype.kind == "O" or items is bytes:
        for item in array.flat:
            if not isinstance(item, items):
                what = "a string" if items is str else "bytes"
                raise TypeError(f"{type(item).__name__} {item!r} is not {what}")
        return array.astype(object, copy=False)
    return as_dtype(array, string_dtype()).astype(object)


def _records(value: tuple[Any, ...] | list[Any], dtype: np.dtype[Any]) -> np.ndarray:
    """A tuple (one element) or a list of them as a structured `dtype`: each field by
    this module's rule (`_field`; numpy's own conversion would truncate 1.5 into an int
    field, wrap 2**40 into an int32 one, year 3000 into a datetime64[ns] one, cut text to
    the field's width); `np.asarray` alone makes a tuple a row of numbers."""
    loose = np.asarray(value, dtype=[(name, object) for name in dtype.names or ()])
    checked = {name: _field(loose[name], field) for name, (field, *_) in dtype.fields.items()}
    out = np.asarray(value, dtype=dtype)
    for name, column in checked.items():
        if column is not None:
            out[name] = _spread(column, out[name].ndim)
    return out


def _field(objects: np.ndarray, field: np.dtype[Any]) -> np.ndarray | None:
    """One field's elements (objects) as `field` by this module's rule: numbers and text
    as such, nested records and sub-arrays element by element, times parsed in their own
    unit first (text, `datetime`, `datetime64` of any unit). None for what is left to
    numpy: other kinds, and times numpy gives no unit of their own (ints)."""
    base, items = field.base, objects.tolist()
    if base.kind in "mM":
        try:
            items = np.array(items, dtype=f"{base.kind}8")
        except (TypeError, ValueError, OverflowError):
            return None
    elif base.kind not in "biufcSU" and base.names is None:
        return None
    return as_dtype(items, base)


def _fields(array: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Structured `array` as another structured `dtype`: field by field in order, as numpy
    assigns records, each field by this module's rule (numpy's cast would wrap 300 in an
    `int8` field, make 1e300 inf in a `float32` one, year 3000 1830 in a `datetime64[ns]`
    one)."""
    names = array.dtype.names or ()
    if len(names) != len(dtype.names or ()):
        raise TypeError(f"cannot cast {array.dtype} to {dtype}")
    out = np.empty(array.shape, dtype=dtype)
    for source, (name, (field, *_)) in zip(names, dtype.fields.items(), strict=True):
        out[name] = _spread(as_dtype(array[source], field.base), out[name].ndim)
    return out


def _spread(column: np.ndarray, ndim: int) -> np.ndarray:
    """A field's values with trailing axes for a sub-array field's, so that one value per
    record fills the record's sub-array."""
    return column.reshape(column.shape + (1,) * (ndim - column.ndim))


def _decoded(array: np.ndarray) -> np.ndarray:
    """`array` with bytes (a bytes dtype, or bytes objects) as the text they encode in
    UTF-8, for a string type: a `ValueError` naming the first that is not UTF-8."""
    if array.dtype.kind == "S":
        array = array.astype(object)
    elif array.dtype.kind != "O" or not any(isinstance(v, bytes) for v in array.flat):
        return array
    text = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        try:
            text[index] = item.decode("utf-8") if isinstance(item, bytes) else item
        except UnicodeDecodeError as error:
            raise ValueError(f"bytes {item!r} are not UTF-8 text ({error.reason})") from None
    return text


def as_fill_value(value: Any, dtype: np.dtype[Any]) -> Any:
    """`value` as the fill value of an array of `dtype` (a bool, numeric, string,
    datetime or timedelta type), by `as_dtype`'s rule; also a whole-number float for an
    integer type, 0 or 1 for a bool, and text for a float ("NaN", "1e3") or datetime
    ("2000-01-01") type. Raises as `as_dtype`."""
    if dtype.kind == "b":
        return _bool_fill(value)
    if dtype.kind in "iu" and isinstance(value, float | np.floating):
        if not float(value).is_integer():
            info = np.iinfo(dtype)
            raise ValueOutOfRangeError(
                f"{value} is not a whole number: {dtype.name} holds the integers "
                f"{info.min} to {info.max}"
            )
        value = int(value)
    elif isinstance(value, str) and dtype.kind in "fcM":
        value = _parsed(value, dtype)
    return as_dtype(value, dtype)[()]


def _bool_fill(value: Any) -> np.bool_:
    """A bool fill value: True, False, 1 or 0 (JSON writers give numbers); 2 is no bool."""
    numeric = isinstance(value, int | float | np.integer | np.floating)
    if isinstance(value, bool | np.bool_) or (numeric and value in (0, 1)):
        return np.bool_(value)
    raise ValueOutOfRangeError(f"{value!r} is out of range: bool holds True and False (1 and 0)")


def _parsed(text: str, dtype: np.dtype[Any]) -> Any:
    """`text` at full precision: a number as the widest float, a date in its own unit
    (NaT in `dtype`'s: numpy deprecates NaT without one)."""
    if dtype.kind == "f" and text.strip().lstrip("+-")[:2].lower() == "0x":
        return _float_bits(text.strip(), dtype)
    if dtype.kind == "f":
        return np.array(text, dtype=np.longdouble)
    if dtype.kind == "c":
        return np.array(text, dtype=np.clongdouble)
    if text.strip().lower() == "nat":
        return np.array("NaT", dtype=dtype)
    return np.datetime64(text)


def _float_bits(text: str, dtype: np.dtype[Any]) -> np.ndarray:
    """Hexadecimal text for a float type: its bits, as a v3 `fill_value` writes a NaN's
    ("0x7fc00000" for float32), never the number (C would read 2143289344.0)."""
    digits = 2 * dtype.itemsize
    if len(text) != 2 + digits or not all(c in "0123456789abcdefABCDEF" for c in text[2:]):
        raise ValueOutOfRangeError(
            f"{text!r} is no {dtype.name} fill value: hexadecimal text gives the bits, "
            f"'0x' and {digits} hex digits"
        )
    return np.array(int(text, 16), dtype=f"<u{dtype.itemsize}").view(f"<f{dtype.itemsize}")


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


def _from_objects(array: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Objects that numpy's `same_kind` rule refuses but whose values `dtype` holds: Python
    ints beyond 64 bits for a float or complex type (as float64, so that one past its
    range is refused here and one past `dtype`'s after the cast), `str`s for a
    variable-length string type (numpy would take any object, as its `str()`)."""
    if dtype.kind in "fc" and array.size and _all_integers(array):
        try:
            return array.astype(np.float64)
        except OverflowError:
            big = [int(v) for v in array.flat if abs(int(v)) > int(np.finfo(np.float64).max)]
            info = np.finfo(dtype)
            _refuse(
                min(big), max(big), len(big), f"{dtype.name} holds {info.min!s} to {info.max!s}"
            )
    if dtype.kind == "T" and all(isinstance(v, str) for v in array.flat):
        return array.astype(dtype)
    return array


def _check_string_width(array: np.ndarray, dtype: np.dtype[Any]) -> None:
    """Refuse strings longer than a fixed-width string type holds (numpy keeps their
    first characters); numbers, bools and dates by the text numpy makes of them."""
    width = _characters(dtype)
    if array.size == 0 or (array.dtype.kind in "SU" and _characters(array.dtype) <= width):
        return
    if array.dtype.kind in "SUTO":
        longest = int(string_lengths(array).max())
        if longest > width:
            raise ValueOutOfRangeError(
                f"a string of {longest} characters is out of range: {dtype.str} holds {width}"
            )
        return
    lengths = np.char.str_len(np.ravel(array).astype(dtype.kind))  # unbounded: whole text
    if lengths.max() > width:
        value = np.ravel(array)[int(np.argmax(lengths))]
        raise ValueOutOfRangeError(
            f"{value!s} is out of range: as text it is {lengths.max()} characters, "
            f"{dtype.str} holds {width}"
        )


def string_lengths(values: np.ndarray) -> np.ndarray:
    """The length of each string in `values` (text, bytes, or objects: those not text
    count 0), flat."""
    if values.dtype.kind in "SU":
        return np.char.str_len(np.ravel(values))
    return np.array([len(v) if isinstance(v, str | bytes) else 0 for v in np.ravel(values)])


def _characters(dtype: np.dtype[Any]) -> int:
    return dtype.itemsize // (4 if dtype.kind == "U" else 1)


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
        bad = [v for v in ints if not info.min <= v <= info.max]
        if not bad:
            return
        low, high, count = min(bad), max(bad), len(bad)
    else:
        if info.min <= array.min() and array.max() <= info.max:
            return
        # Only the values out of range: those in range between them would mislead.
        offending = array[(array < info.min) | (array > info.max)]
        low, high, count = int(offending.min()), int(offending.max()), offending.size
    _refuse(low, high, count, f"{np.dtype(dtype).name} holds {info.min} to {info.max}", what)


def _check_time_range(array: np.ndarray, dtype: np.dtype[Any]) -> None:
    """Refuse datetimes or timedeltas that leave the 64-bit range of `dtype`'s (finer)
    unit. The conversion is monotonic, so the least and greatest values decide."""
    if array.size == 0 or not np.can_cast(array.dtype, dtype, "safe"):
        return  # to a coarser unit: numpy floors, and nothing grows
    ticks = array.astype(array.dtype.newbyteorder("="), copy=False).view(np.int64)
    high = ticks.max()
    if high == _NAT:
        return  # all NaT
    low = ticks.min()
    if low == _NAT:  # some NaT: the least of the others
        low = np.where(ticks == _NAT, high, ticks).min()
    ends = np.array([low, high], dtype=np.int64).view(array.dtype.newbyteorder("="))
    bad = [end for end in ends if not _converts(end, dtype)]
    if bad:
        extremes = np.array([_NAT + 1, -(_NAT + 1)], np.int64).view(dtype.newbyteorder("="))
        limits = f"{dtype} holds {extremes[0]} to {extremes[1]}"
        _refuse(bad[0], bad[-1], len(bad), limits)


def _converts(time: np.generic, dtype: np.dtype[Any]) -> bool:
    """Whether `time` comes back from `dtype`'s unit as it was (numpy before 2.5 wraps
    on the way, later ones raise)."""
    try:
        return bool(np.array(time).astype(dtype).astype(time.dtype) == time)
    except OverflowError:
        return False


def _check_float_range(array: np.ndarray, result: np.ndarray) -> None:
    """Refuse finite values that became inf in `result` (a float or complex array)."""
    if array.dtype.kind not in "biufc" or not np.isinf(result).any():
        return
    for part in (np.real, np.imag) if result.dtype.kind == "c" else (np.asarray,):
        source, target = part(array), part(result)
        overflowed = np.isinf(target) & np.isfinite(source)
        if overflowed.any():
            bad = source[overflowed]
            info = np.finfo(result.dtype)
            parts = "parts from " if result.dtype.kind == "c" else ""
            limits = f"{result.dtype.name} holds {parts}{info.min!s} to {info.max!s}"
            _refuse(bad.min(), bad.max(), bad.size, limits)


def _refuse(low: Any, high: Any, size: int, limits: str, what: str = "") -> None:
    lead = f"{what} " if what else ""
    if size == 1 or low == high:
        raise ValueOutOfRangeError(f"{lead}{low!s} is out of range: {limits}")
    raise ValueOutOfRangeError(f"{lead}values from {low!s} to {high!s} are out of range: {limits}")
