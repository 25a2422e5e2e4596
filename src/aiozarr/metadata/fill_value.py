"""Fill values: JSON <-> numpy scalars of the array's dtype, per format.

v3 floats accept numbers, "NaN", "Infinity", "-Infinity" and "0x..." bit patterns
(the only way to keep a NaN payload); writing gives "NaN" for the canonical NaN and
the bit pattern for any other. v2 has no bit patterns: every NaN is written "NaN", so
a negative or payload NaN fill comes back as the canonical NaN. Fixed-size byte types
are base64 (or v3 byte lists).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aiozarr.errors import MetadataError
from aiozarr.metadata import dtypes
from aiozarr.metadata.json import fail

if TYPE_CHECKING:
    from aiozarr.metadata.model import ArrayMetadata

_FLOAT_WORDS = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_INT64 = np.iinfo(np.int64)


def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse_float(value: Any, dtype: np.dtype[Any], key: str, v3: bool) -> np.floating[Any]:
    native = _native(dtype)
    if _is_number(value):
        try:
            with np.errstate(over="ignore"):  # the spec: round to the nearest representable value
                return native.type(value)
        except OverflowError:  # an integer past every float (10**400): no nearest value
            fail(key, "fill_value", f"a number within the range of {dtype}", value)
    if isinstance(value, str) and value in _FLOAT_WORDS:
        return native.type(_FLOAT_WORDS[value])
    if (
        v3
        and isinstance(value, str)
        and _HEX.fullmatch(value)
        and len(value) == 2 + 2 * dtype.itemsize
    ):
        bits = np.array(int(value, 16), dtype=f"u{dtype.itemsize}")
        return bits.view(native)[()]  # type: ignore[no-any-return]
    hexes = f', "0x" and {2 * dtype.itemsize} hex digits' if v3 else ""
    fail(key, "fill_value", f'a number, "NaN", "Infinity", "-Infinity"{hexes} for {dtype}', value)


def _float_json(value: np.floating[Any], v3: bool) -> Any:
    if np.isnan(value) and not v3:
        return "NaN"  # v2 knows no bit patterns: the payload (and sign) is lost
    if np.isnan(value):
        canonical = np.array(np.nan, dtype=value.dtype).view(f"u{value.itemsize}")[()]
        bits = np.array(value).view(f"u{value.itemsize}")[()]
        return "NaN" if bits == canonical else f"0x{int(bits):0{2 * value.itemsize}x}"
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


def _parse_int(value: Any, dtype: np.dtype[Any], key: str) -> Any:
    # an integral float such as 0.0 is accepted: it is exact, and some writers produce it
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    info = np.iinfo(dtype)
    if not isinstance(value, int) or isinstance(value, bool) or not info.min <= value <= info.max:
        fail(key, "fill_value", f"an integer in [{info.min}, {info.max}] for {dtype}", value)
    return _native(dtype).type(value)


def _parse_bytes(value: Any, size: int | None, key: str) -> bytes:
    """Bytes from base64 text or a list of integers in [0, 255]."""
    data: bytes | None = None
    if isinstance(value, str):
        try:
            data = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            data = None
    elif isinstance(value, list) and all(
        isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value
    ):
        data = bytes(value)
    if data is None or (size is not None and len(data) > size):
        limit = "" if size is None else f" of at most {size} bytes"
        fail(key, "fill_value", f"base64 text or a list of byte values{limit}", value)
    return data


def _parse_time(value: Any, dtype: np.dtype[Any], key: str) -> Any:
    if value == "NaT":
        value = int(_INT64.min)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not _INT64.min <= value <= _INT64.max
    ):
        fail(key, "fill_value", f'an integer in the int64 range or "NaT" for {dtype}', value)
    return np.array(value, dtype=np.int64).astype(_native(dtype))[()]


def _parse_struct(value: Any, dtype: np.dtype[Any], key: str, v3: bool) -> Any:
    if v3 and isinstance(value, Mapping):
        if set(value) != set(dtype.names or ()):
            fail(key, "fill_value", f"an object with the fields {list(dtype.names or ())}", value)
        out = np.zeros((), dtype=dtype)
        for name in dtype.names or ():
            sub = dtype.fields[name][0]  # type: ignore[index]
            out[name] = parse_v3(value[name], sub, dtypes.v3_name(dtypes.to_v3(sub)), key)
        return out[()]
    data = _parse_bytes(value, dtype.itemsize, key)
    if len(data) != dtype.itemsize:
        fail(key, "fill_value", f"{dtype.itemsize} bytes of base64 for {dtype}", value)
    return np.frombuffer(data, dtype=dtype).copy()[0]


def parse_v3(value: Any, dtype: np.dtype[Any], name: str, key: str) -> Any:
    """The fill value of a v3 array of `dtype` (v3 data type `name`) as a numpy scalar."""
    kind = dtype.kind
    if kind == "b":
        if not isinstance(value, bool):
            fail(key, "fill_value", "true or false", value)
        return np.bool_(value)
    if kind in "iu":
        return _parse_int(value, dtype, key)
    if kind == "f":
        return _parse_float(value, dtype, key, v3=True)
    if kind == "c":
        return _parse_complex(value, dtype, key, v3=True)
    if kind in "Mm":
        return _parse_time(value, dtype, key)
    if kind in "OT":
        if name in dtypes.BYTES_NAMES:
            return _parse_bytes(value, None, key)
        if not isinstance(value, str):
            fail(key, "fill_value", "a string", value)
        return dtype.type(value)
    if kind == "U":
        if not isinstance(value, str) or len(value) > dtype.itemsize // 4:
            fail(key, "fill_value", f"a string of at most {dtype.itemsize // 4} characters", value)
        return np.str_(value)
    if kind == "S":
        return np.bytes_(_parse_bytes(value, dtype.itemsize, key))
    if dtype.names is not None:
        return _parse_struct(value, dtype, key, v3=True)
    data = _parse_bytes(value, dtype.itemsize, key)
    if len(data) != dtype.itemsize:
        fail(key, "fill_value", f"exactly {dtype.itemsize} bytes for {name}", value)
    return np.void(data)


def _parse_complex(value: Any, dtype: np.dtype[Any], key: str, v3: bool) -> Any:
    if not isinstance(value, list) or len(value) != 2:
        fail(key, "fill_value", f"[real, imaginary] for {dtype}", value)
    part = np.dtype(f"f{dtype.itemsize // 2}")
    parts = np.array([_parse_float(v, part, key, v3) for v in value], dtype=part)
    return parts.view(_native(dtype))[0]  # a view keeps NaN payloads


def _scalar(value: Any, dtype: np.dtype[Any]) -> Any:
    try:
        return np.array(value, dtype=dtype)[()]
    except (TypeError, ValueError, OverflowError) as error:
        raise MetadataError(f"fill_value {value!r} is not a valid {dtype}: {error}") from None


def to_v3_json(value: Any, dtype: np.dtype[Any], name: str) -> Any:
    """The JSON `fill_value` of a v3 array (as zarr-python writes it)."""
    if value is None:
        raise MetadataError("fill_value: Zarr v3 arrays need a fill value, got None")
    kind = dtype.kind
    if kind in "OT":
        if name in dtypes.BYTES_NAMES:
            return base64.b64encode(bytes(value)).decode("ascii")
        return str(value)
    scalar = _scalar(value, dtype)
    if kind == "V" and dtype.names is None and dtypes.is_raw_bits(name):
        return list(scalar.tobytes())  # the core spec's r<N> form
    if dtype.names is not None and name == "struct":  # an object by field, as it is read
        fields = {n: dtype.fields[n][0] for n in dtype.names}  # type: ignore[index]
        return {n: to_v3_json(scalar[n], sub, _field_name(sub)) for n, sub in fields.items()}
    return _common_json(scalar, dtype, v3=True)


def _field_name(dtype: np.dtype[Any]) -> str:
    return "struct" if dtype.names is not None else dtypes.v3_name(dtypes.to_v3(dtype))


def _common_json(scalar: Any, dtype: np.dtype[Any], v3: bool) -> Any:
    kind = dtype.kind
    if kind == "b":
        return bool(scalar)
    if kind in "iu":
        return int(scalar)
    if kind == "f":
        return _float_json(scalar, v3)
    if kind == "c":
        return [_float_json(scalar.real, v3), _float_json(scalar.imag, v3)]
    if kind in "Mm":
        return int(np.array(scalar, dtype=dtype).astype(np.int64)[()])  # NaT: -2**63
    if kind == "U":
        return str(scalar)
    if kind == "S":  # null-terminated: the value without its padding, as zarr-python writes it
        return base64.b64encode(bytes(scalar)).decode("ascii")
    return base64.b64encode(np.array(scalar, dtype=dtype).tobytes()).decode("ascii")


def parse_v2(value: Any, dtype: np.dtype[Any], key: str, filters: Any = None) -> Any:
    """The fill value of a v2 array of `dtype` as a numpy scalar, or None (null); an
    object array's as its first filter gives it meaning (`_object_v2`)."""
    if value is None:
        return None
    kind = dtype.kind
    if kind == "b":
        if not isinstance(value, bool) and value not in (0, 1):
            fail(key, "fill_value", "true, false or null", value)
        return np.bool_(value)
    if kind in "iu":
        return _parse_int(value, dtype, key)
    if kind == "f":
        return _parse_float(value, dtype, key, v3=False)
    if kind == "c":
        return _parse_complex(value, dtype, key, v3=False)
    if kind in "Mm":
        return _parse_time(value, dtype, key)
    if kind == "U":
        if not isinstance(value, str) or len(value) > dtype.itemsize // 4:
            fail(key, "fill_value", f"a string of at most {dtype.itemsize // 4} characters", value)
        return np.str_(value)
    if kind == "O":
        return _object_v2(value, filters, key)
    if kind == "S":
        return np.bytes_(_parse_bytes(value, dtype.itemsize, key))
    if dtype.names is not None:
        return _parse_struct(value, dtype, key, v3=False)
    data = _parse_bytes(value, dtype.itemsize, key)
    if len(data) != dtype.itemsize:
        fail(key, "fill_value", f"exactly {dtype.itemsize} bytes of base64 for {dtype}", value)
    return np.void(data)


def _object_v2(value: Any, filters: Any, key: str) -> Any:
    """An object array's fill value as its first filter gives it meaning: a string array's
    a str, a number as its text (zarr-python 3 reads zarr-python 2's default 0 as "0");
    a bytes array's bytes from base64, or b"" for 0 (what numcodecs' vlen-bytes stores
    for it; zarr-python 3 opens no such array). Other objects: the JSON value itself."""
    items = dtypes.OBJECT_ITEMS.get((filters or [{}])[0].get("id"))
    if items is str and (isinstance(value, str | bool) or _is_number(value)):
        return str(value)
    if items is bytes and isinstance(value, str):
        return _parse_bytes(value, None, key)
    if items is bytes and (isinstance(value, bool) or _is_number(value)) and value == 0:
        return b""
    if items is str:
        fail(key, "fill_value", "a string or a number for variable-length strings", value)
    if items is bytes:
        fail(key, "fill_value", "base64 text (or 0) for variable-length bytes", value)
    return value


def to_v2_json(value: Any, dtype: np.dtype[Any]) -> Any:
    """The JSON `fill_value` of a v2 array (as zarr-python writes it)."""
    if value is None:
        return None
    if dtype.kind in "OT":
        if isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        return value.item() if isinstance(value, np.generic) else value
    return _common_json(_scalar(value, dtype), dtype, v3=False)


def as_stored(meta: ArrayMetadata) -> Any:
    """The fill value of `meta` as its document gives it back: a v2 float's with every
    NaN canonical (`to_v2_json`)."""
    value = meta.fill_value
    if meta.zarr_format != 2 or meta.dtype.kind not in "fc" or value is None:
        return value
    return parse_v2(to_v2_json(value, meta.dtype), meta.dtype, "fill_value")


def unset_fill(dtype: np.dtype[Any], filters: Any) -> Any:
    """What unwritten elements of a v2 array with a null fill value read as, as
    zarr-python reads them: an empty string (or bytes) where the first filter makes
    variable-length strings (or bytes); None for other objects, as zarr-python 2 left
    them; NaT for datetimes and timedeltas; zero for every other dtype."""
    if dtype.kind in "Mm":
        return np.array("NaT", dtype=_native(dtype))[()]
    if not dtype.hasobject:
        return np.zeros((), dtype=dtype)[()]
    items = dtypes.OBJECT_ITEMS.get((filters or [{}])[0].get("id"))
    return None if items is None else items()


def is_fill(chunk: np.ndarray, fill_value: Any) -> bool:
    """Whether every element's bytes equal the fill value's bytes.

    Bytes, not values: -0.0 is not a fill of 0.0, and a NaN is a fill only of a NaN
    with the same payload, so a chunk left unwritten always reads back bit for bit.
    Object arrays (no fixed bytes) compare values, of str or bytes items only.
    """
    if fill_value is None:
        return False
    if chunk.dtype.hasobject:
        return _objects_are_fill(chunk, fill_value)
    itemsize = chunk.dtype.itemsize
    if not chunk.size or not itemsize:
        return True
    fill = np.asarray(fill_value, dtype=chunk.dtype).reshape(1)
    if itemsize in (1, 2, 4, 8):
        bits = np.dtype(f"u{itemsize}")
        items = np.ascontiguousarray(chunk).reshape(-1).view(bits)
        target = fill.view(bits)[0]
        # Most written chunks differ at once: skip the full comparison.
        return bool(items[0] == target and np.all(items == target))
    rows = np.ascontiguousarray(chunk).reshape(-1).view(np.uint8).reshape(-1, itemsize)
    target_bytes = fill.view(np.uint8)
    return bool(np.array_equal(rows[0], target_bytes) and np.all(rows == target_bytes))


def _objects_are_fill(chunk: np.ndarray, fill_value: Any) -> bool:
    """Whether every item of an object (or variable-length string) chunk is the string
    or bytes fill value. Other items are never fill: `==` says 0 == False == 0.0, and
    an array item answers with an array, so the chunk is stored and reads back as written."""
    if isinstance(fill_value, str):
        kind: type = str
    elif isinstance(fill_value, bytes):
        kind = bytes
    else:
        return False
    return all(isinstance(v, kind) and v == fill_value for v in chunk.flat)


def fill_at(out: np.ndarray, selection: Any, fill_value: Any) -> None:
    """Set `out[selection]` to the fill value, each element the value itself: an object
    fill that is a list is each element's list, and a bytes or str fill ending in NUL
    keeps it (numpy would broadcast the list, and strip the NULs on its way through a
    fixed-size string)."""
    if not out.dtype.hasobject:
        out[selection] = fill_value
        return
    box = np.empty((), dtype=object)
    box[()] = fill_value
    parts = selection if isinstance(selection, tuple) else (selection,)
    if not any(part is Ellipsis for part in parts):
        parts = (*parts, Ellipsis)  # an element's place broadcasts the box, never holds it
    out[parts] = box


def filled(shape: tuple[int, ...], dtype: np.dtype[Any], fill_value: Any) -> np.ndarray:
    """A new array of `shape` and `dtype` holding the fill value everywhere (`fill_at`)."""
    out = np.empty(shape, dtype=dtype)
    fill_at(out, (), fill_value)
    return out
