"""xarray's conventions in Zarr metadata, and how they cross between v2 and v3.

xarray keeps a variable's dimension names in v2's `_ARRAY_DIMENSIONS` attribute and in
v3's `dimension_names`. Its missing-value marker differs too: in v2 the array's
`fill_value` is the CF `_FillValue` (values equal to it read as missing), in v3 it is
only Zarr's fill value and the marker is a `_FillValue` attribute (floats as base64 of a
little-endian double, complex as two of those, bytes as base64, other types as is).
Converting an array xarray wrote keeps both, so xarray reads the copy as it read the
original. Arrays without dimension names are not xarray's: they convert unchanged.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

DIMENSIONS_KEY = "_ARRAY_DIMENSIONS"
FILL_KEY = "_FillValue"


def v2_dimension_names(attributes: Mapping[str, Any], ndim: int) -> tuple[str, ...] | None:
    """The names in a v2 `_ARRAY_DIMENSIONS` attribute, or None when it is not one
    string per dimension."""
    names = attributes.get(DIMENSIONS_KEY)
    if isinstance(names, list) and len(names) == ndim and all(isinstance(n, str) for n in names):
        return tuple(names)
    return None


def to_v3(
    attributes: Mapping[str, Any], fill_value: Any, dtype: np.dtype[Any], ndim: int
) -> tuple[dict[str, Any], tuple[str, ...] | None]:
    """A v2 array's attributes -> (v3 attributes, v3 dimension names).

    `_ARRAY_DIMENSIONS` becomes the dimension names; the v2 fill value, xarray's missing
    marker there, becomes the `_FillValue` attribute that marks it in v3.
    """
    names = v2_dimension_names(attributes, ndim)
    if names is None:
        return dict(attributes), None
    out = {k: v for k, v in attributes.items() if k != DIMENSIONS_KEY}
    if fill_value is not None and FILL_KEY not in out:
        encoded = _encode_fill(fill_value, dtype)
        if encoded is not None:
            out[FILL_KEY] = encoded
    return out, names


def to_v2(
    attributes: Mapping[str, Any],
    names: tuple[str | None, ...] | None,
    fill_value: Any,
    dtype: np.dtype[Any],
) -> tuple[dict[str, Any], Any]:
    """A v3 array's attributes, dimension names and fill value -> (v2 attributes, v2 fill).

    Names become `_ARRAY_DIMENSIONS` (xarray needs one for every dimension: a null among
    them leaves the array as it is). The v2 fill value is the `_FillValue` attribute's
    value, or null when there is none: a v2 fill value is a missing marker to xarray.
    """
    if names is None or not all(isinstance(n, str) for n in names):
        return dict(attributes), fill_value
    out = dict(attributes)
    out.setdefault(DIMENSIONS_KEY, list(names))
    if FILL_KEY not in out:
        return out, None
    decoded = _decode_fill(out[FILL_KEY], dtype)
    if decoded is _UNKNOWN:
        return out, fill_value
    del out[FILL_KEY]
    return out, decoded


_UNKNOWN = object()


def _double(value: Any) -> str:
    return base64.standard_b64encode(struct.pack("<d", float(value))).decode("ascii")


def _undouble(value: Any) -> float:
    return float(struct.unpack("<d", base64.standard_b64decode(value))[0])


def _encode_fill(value: Any, dtype: np.dtype[Any]) -> Any:
    kind = dtype.kind
    if kind == "f":
        return _double(value)
    if kind == "c":
        value = complex(value)
        return [_double(value.real), _double(value.imag)]
    if kind in "iu":
        return int(value)
    if kind == "b":
        return bool(value)
    if kind == "S":
        return base64.standard_b64encode(bytes(value)).decode("ascii")
    if kind == "U":
        return str(value)
    return None  # no convention: left out


def _decode_fill(value: Any, dtype: np.dtype[Any]) -> Any:
    kind = dtype.kind
    try:
        if kind == "f" and isinstance(value, str):
            return dtype.type(_undouble(value))
        if kind == "c" and isinstance(value, list) and len(value) == 2:
            return dtype.type(complex(_undouble(value[0]), _undouble(value[1])))
        if kind in "iu" and isinstance(value, int | float) and not isinstance(value, bool):
            return dtype.type(int(value))
        if kind == "b" and isinstance(value, bool):
            return np.bool_(value)
        if kind == "S" and isinstance(value, str):
            return np.bytes_(base64.standard_b64decode(value))
        if kind == "U" and isinstance(value, str):
            return np.str_(value)
    except (binascii.Error, struct.error, ValueError, OverflowError):
        pass
    return _UNKNOWN
