"""Data types: Zarr v3 `data_type` values and v2 `dtype` typestrs <-> numpy dtypes.

v3 data types carry no byte order (the `bytes` codec decides it), so they map to
little-endian numpy dtypes. v2 typestrs keep their byte order (`>f8` stays big-endian:
the v2 codec bridge decodes into exactly that dtype).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.metadata.json import fail, show

if TYPE_CHECKING:
    from aiozarr.metadata.model import ArrayMetadata

#: The core data types of the v3 specification.
V3_CORE: dict[str, np.dtype[Any]] = {
    name: np.dtype(code)
    for name, code in {
        "bool": "|b1",
        "int8": "|i1",
        "int16": "<i2",
        "int32": "<i4",
        "int64": "<i8",
        "uint8": "|u1",
        "uint16": "<u2",
        "uint32": "<u4",
        "uint64": "<u8",
        "float16": "<f2",
        "float32": "<f4",
        "float64": "<f8",
        "complex64": "<c8",
        "complex128": "<c16",
    }.items()
}
_CORE_NAMES = {(d.kind, d.itemsize): name for name, d in V3_CORE.items()}

#: Names of variable-length data types (object arrays); "string" holds str, the rest bytes.
STRING_NAMES = frozenset({"string"})
BYTES_NAMES = frozenset({"bytes", "variable_length_bytes"})
STRUCT_NAMES = frozenset({"structured", "struct"})
#: The elements of an object array by the codec that stores them (v2: its first filter).
OBJECT_ITEMS: dict[str, type] = {"vlen-utf8": str, "vlen-bytes": bytes}
TIME_NAMES = {"numpy.datetime64": "M", "numpy.timedelta64": "m"}
TIME_UNITS = frozenset(
    {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"}
)
_LENGTH_NAMES = {"fixed_length_utf32": "U", "raw_bytes": "V", "null_terminated_bytes": "S"}
_RAW_BITS = re.compile(r"r([1-9][0-9]*)")
_MAX_SCALE = 2**31 - 1


def string_dtype() -> np.dtype[Any]:
    """The numpy dtype of variable-length UTF-8 strings (v3 `string`)."""
    return np.dtype(np.dtypes.StringDType())


def object_items(meta: ArrayMetadata) -> type | None:
    """What each element of an object array is: `str` or `bytes` where it holds
    variable-length strings or bytes (v3: by its data type; v2: by its first filter);
    None where any object goes (another object codec) or the dtype is not object."""
    if meta.dtype.kind != "O":
        return None
    if meta.zarr_format == 3:
        named = meta.data_type is not None and v3_name(meta.data_type) in BYTES_NAMES
        return bytes if named else str
    return OBJECT_ITEMS.get((meta.filters or [{}])[0].get("id"))


def has_byte_order(dtype: np.dtype[Any]) -> bool:
    """Whether `dtype`'s stored bytes depend on the byte order: a number, time or
    fixed-length unicode of more than one byte, or a record with such a field (so its
    `bytes` codec needs an `endian`)."""
    if dtype.names is not None:
        return any(has_byte_order(dtype.fields[n][0]) for n in dtype.names)  # type: ignore[index]
    if dtype.subdtype is not None:
        return has_byte_order(dtype.subdtype[0])
    return dtype.itemsize > 1 and dtype.kind in "iufcmMU"


def is_raw_bits(name: str) -> bool:
    """Whether `name` is a core raw-bits data type such as `r16`."""
    return _RAW_BITS.fullmatch(name) is not None


def v3_name(data_type: Any) -> str:
    """The name of a v3 `data_type` value (a plain name or `{"name": ...}`)."""
    if isinstance(data_type, Mapping):
        return str(data_type.get("name"))
    return str(data_type)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _config_fields(config: Any, key: str, field: str, required: set[str]) -> Mapping[str, Any]:
    if not isinstance(config, Mapping) or set(config) != required:
        fail(key, field, f"an object with exactly the members {sorted(required)}", config)
    return config


def parse_v3(data_type: Any, key: str, field: str = "data_type") -> np.dtype[Any]:
    """The numpy dtype of a v3 `data_type` value; errors name `key` and `field`."""
    if isinstance(data_type, str):
        name, config = data_type, None
    elif isinstance(data_type, Mapping):
        extra = set(data_type) - {"name", "configuration", "must_understand"}
        name, config = data_type.get("name"), data_type.get("configuration")
        if extra or not isinstance(name, str):
            fail(key, field, 'a data type name or {"name": ..., "configuration": {...}}', data_type)
        if config is not None and not isinstance(config, Mapping):
            fail(key, f"{field}.configuration", "an object", config)
        if config == {}:
            config = None
    else:
        fail(key, field, 'a data type name or {"name": ..., "configuration": {...}}', data_type)

    if name in V3_CORE or name in STRING_NAMES or name in BYTES_NAMES or _RAW_BITS.fullmatch(name):
        if config is not None:
            fail(key, f"{field}.configuration", f"no configuration for {name!r}", config)
        if name in V3_CORE:
            return V3_CORE[name]
        if name in STRING_NAMES:
            return string_dtype()
        if name in BYTES_NAMES:
            return np.dtype(object)
        bits = int(name[1:])
        if bits % 8:
            fail(key, field, "raw bits r<N> with N a multiple of 8", name)
        return np.dtype(f"V{bits // 8}")
    if name in TIME_NAMES:
        return _parse_time(name, config, key, f"{field}.configuration")
    if name in _LENGTH_NAMES:
        config = _config_fields(config, key, f"{field}.configuration", {"length_bytes"})
        length = config["length_bytes"]
        kind = _LENGTH_NAMES[name]
        if not _positive(length) or (kind == "U" and length % 4):
            what = "a positive multiple of 4" if kind == "U" else "a positive integer"
            fail(key, f"{field}.configuration.length_bytes", what, length)
        return np.dtype(f"<U{length // 4}" if kind == "U" else f"{kind}{length}")
    if name in STRUCT_NAMES:
        config = _config_fields(config, key, f"{field}.configuration", {"fields"})
        return _parse_struct(config["fields"], key, f"{field}.configuration.fields")
    raise UnsupportedError(f'{key}: field "{field}": unsupported data type {show(data_type)}')


def _parse_time(name: str, config: Any, key: str, field: str) -> np.dtype[Any]:
    config = _config_fields(config, key, field, {"unit", "scale_factor"})
    unit, scale = config["unit"], config["scale_factor"]
    if unit not in TIME_UNITS:
        fail(key, f"{field}.unit", f"one of {sorted(TIME_UNITS)}", unit)
    if not _positive(scale) or scale > _MAX_SCALE:
        fail(key, f"{field}.scale_factor", f"an integer in [1, {_MAX_SCALE}]", scale)
    kind = TIME_NAMES[name]
    if unit == "generic":
        return np.dtype(f"<{kind}8")
    unit = "us" if unit == "μs" else unit
    return np.dtype(f"<{kind}8[{'' if scale == 1 else scale}{unit}]")


def _parse_struct(fields: Any, key: str, field: str) -> np.dtype[Any]:
    if not isinstance(fields, list) or not fields:
        fail(key, field, "a non-empty list of fields", fields)
    parsed: list[tuple[str, np.dtype[Any]]] = []
    for i, item in enumerate(fields):
        where = f"{field}[{i}]"
        if isinstance(item, Mapping) and set(item) == {"name", "data_type"}:
            fname, ftype = item["name"], item["data_type"]
        elif isinstance(item, list) and len(item) == 2:
            fname, ftype = item
        else:
            fail(key, where, '[name, data_type] or {"name": ..., "data_type": ...}', item)
        if not isinstance(fname, str) or not fname or fname in dict(parsed):
            fail(key, f"{where}.name", "a unique non-empty string", fname)
        dtype = parse_v3(ftype, key, f"{where}.data_type")
        if dtype.hasobject or dtype.kind == "T":
            raise UnsupportedError(
                f'{key}: field "{where}.data_type": variable-length field {show(ftype)} '
                "in a structured data type is not supported"
            )
        parsed.append((fname, dtype))
    return np.dtype(parsed)


def _check_numpy_type(dtype: np.dtype[Any]) -> None:
    # Extension types (ml_dtypes' bfloat16, float8_*, int4, ...) are kind "V" without
    # fields: stored as raw bytes they would read back as opaque `V2` everywhere.
    if dtype.kind == "V" and dtype.names is None and dtype.type is not np.void:
        raise UnsupportedError(
            f"data type {dtype} ({dtype.type.__module__}.{dtype.type.__name__}) has no Zarr "
            "representation aiozarr writes: store the values as a Zarr data type (e.g. "
            "values.astype('float32'), or values.view('uint16') to keep the bits)"
        )


def to_v3(dtype: np.dtype[Any]) -> str | dict[str, Any]:
    """The v3 `data_type` value zarr-python writes for a numpy dtype."""
    _check_numpy_type(dtype)
    kind = dtype.kind
    if (kind, dtype.itemsize) in _CORE_NAMES and kind in "biufc":
        return _CORE_NAMES[(kind, dtype.itemsize)]
    if kind in "Mm":
        unit, count = np.datetime_data(dtype)
        name = "numpy.datetime64" if kind == "M" else "numpy.timedelta64"
        return {"name": name, "configuration": {"unit": unit, "scale_factor": count}}
    if kind in "OT":
        return "string"
    if kind == "U":
        return {"name": "fixed_length_utf32", "configuration": {"length_bytes": dtype.itemsize}}
    if kind == "S":
        return {"name": "null_terminated_bytes", "configuration": {"length_bytes": dtype.itemsize}}
    if kind == "V" and dtype.names is None and dtype.subdtype is None:
        return {"name": "raw_bytes", "configuration": {"length_bytes": dtype.itemsize}}
    if kind == "V" and dtype.names is not None:
        _check_packed(dtype, allow_subarrays=False)
        # `struct`, fields as objects: the spec's name (`structured` is read, never written)
        fields = [
            {"name": name, "data_type": to_v3(dtype.fields[name][0])}  # type: ignore[index]
            for name in dtype.names
        ]
        return {"name": "struct", "configuration": {"fields": fields}}
    raise UnsupportedError(f"data type {dtype} has no Zarr v3 representation")


def _check_packed(dtype: np.dtype[Any], allow_subarrays: bool) -> None:
    # Zarr stores fields back to back: numpy's aligned or offset layouts have no representation
    offset = 0
    for name in dtype.names or ():
        sub, field_offset = dtype.fields[name][:2]  # type: ignore[index]
        if field_offset != offset:
            raise UnsupportedError(f"structured data type {dtype} has padding before {name!r}")
        if not allow_subarrays and sub.subdtype is not None and sub.names is None:
            raise UnsupportedError(
                f"structured data type {dtype}: Zarr v3 has no sub-array field ({name!r})"
            )
        offset += sub.itemsize
    if offset != dtype.itemsize:
        raise UnsupportedError(f"structured data type {dtype} has trailing padding")


_TYPESTR = re.compile(r"[<>|][biufcmMSUVO]\d*(\[\d*[a-zA-Zμ]+\])?")
_V2_KINDS = "biufcmMSUVO"


def parse_v2(dtype: Any, key: str, field: str = "dtype") -> np.dtype[Any]:
    """The numpy dtype of a v2 `dtype` (typestr or structured list); keeps the byte order."""
    if isinstance(dtype, list):
        return _parse_v2_struct(dtype, key, field)
    if not isinstance(dtype, str) or not _TYPESTR.fullmatch(dtype):
        fail(key, field, 'a typestr with byte order such as "<f8" or a list of fields', dtype)
    try:
        parsed = np.dtype(dtype)
    except TypeError:
        fail(key, field, "a numpy typestr", dtype)
    if parsed.kind not in _V2_KINDS:
        fail(key, field, "a numpy typestr", dtype)
    if parsed.itemsize == 0 and parsed.kind in "SUV":
        fail(key, field, "a fixed-size typestr such as '|S10'", dtype)
    if dtype[0] == "|" and parsed.kind in "iufcmMU" and parsed.itemsize > 1:
        fail(
            key, field, f"a byte order ('<' or '>') for {parsed.itemsize}-byte {parsed.kind}", dtype
        )
    return parsed


def _parse_v2_struct(fields: list[Any], key: str, field: str) -> np.dtype[Any]:
    if not fields:
        fail(key, field, "a non-empty list of fields", fields)
    parsed: list[tuple[Any, ...]] = []
    names: set[str] = set()
    for i, item in enumerate(fields):
        where = f"{field}[{i}]"
        if not isinstance(item, list) or len(item) not in (2, 3):
            fail(key, where, "[name, dtype] or [name, dtype, shape]", item)
        name = item[0]
        if not isinstance(name, str) or not name or name in names:
            fail(key, f"{where}[0]", "a unique non-empty field name", name)
        names.add(name)
        sub = parse_v2(item[1], key, f"{where}[1]")
        if len(item) == 3:
            shape = item[2]
            if not isinstance(shape, list) or not all(_positive(s) for s in shape):
                fail(key, f"{where}[2]", "a list of positive integers", shape)
            parsed.append((name, sub, tuple(shape)))
        else:
            parsed.append((name, sub))
    return np.dtype(parsed)


def to_v2(dtype: np.dtype[Any]) -> str | list[Any]:
    """The v2 `dtype` value zarr-python writes for a numpy dtype."""
    if dtype.kind == "T":
        return "|O"  # variable-length strings are object arrays in v2
    if dtype.names is None:
        _check_numpy_type(dtype)
        if dtype.subdtype is not None:
            raise UnsupportedError(f"data type {dtype}: a sub-array needs a structured field")
        return dtype.str
    _check_packed(dtype, allow_subarrays=True)
    fields: list[Any] = []
    for name in dtype.names:
        sub = dtype.fields[name][0]  # type: ignore[index]
        if sub.subdtype is not None and sub.names is None:
            base, shape = sub.subdtype
            fields.append([name, to_v2(base), list(shape)])
        else:
            fields.append([name, to_v2(sub)])
    return fields


# -- create_array's dtype -------------------------------------------------------------------


def requested_dtype(dtype: Any, zarr_format: int) -> tuple[np.dtype[Any], bool]:
    """The numpy dtype to store for `create_array`'s `dtype`, and whether its elements
    are variable-length bytes (stored with `vlen-bytes`), as zarr-python 3 reads it: a
    numpy dtype or its spelling, `str` (variable-length strings), a v3 data type name
    ("string", "variable_length_bytes") or JSON object, or a zarr-python data type object
    (one with `to_json`). Anything else is a `MetadataError` naming it."""
    if dtype is str or (isinstance(dtype, str) and dtype == "str"):
        wanted, holds_bytes = string_dtype(), False
    elif _is_v3_json(dtype) or _is_zarr_dtype(dtype):
        try:
            document = _zarr_json(dtype) if _is_zarr_dtype(dtype) else dtype
            wanted = parse_v3(document, "create_array", "dtype")
        except (UnsupportedError, TypeError, ValueError) as error:
            if isinstance(error, MetadataError):
                raise
            raise MetadataError(f"dtype {_shown(dtype)}: {error}") from None
        holds_bytes = v3_name(document) in BYTES_NAMES
    else:
        wanted, holds_bytes = _numpy_dtype(dtype), False
    if _long_double(wanted):
        # numpy's long double (`g`, float128, complex256) is the platform's: 80-bit
        # extended padded to 16 bytes on x86, IEEE quad on Linux/ARM. A v2 `<f16` written
        # on one reads as other values on another; zarr-python 3 refuses it in both formats.
        raise UnsupportedError(
            f"dtype {_shown(dtype)} ({wanted}: the platform's long double) has no portable "
            "Zarr representation: its bytes mean other values on other platforms; store "
            "the values as float64 (values.astype('float64'), or 'complex128')"
        )
    if wanted.kind in "SUV" and wanted.itemsize == 0:  # `bytes` is "S0"
        raise MetadataError(
            f"dtype {_shown(dtype)} ({wanted.str}) holds no bytes: give a length (e.g. 'S8'), "
            "or str for variable-length strings"
        )
    if zarr_format == 2 and wanted.kind == "T":
        return np.dtype(object), False  # v2 stores variable-length strings as object + vlen-utf8
    return wanted, holds_bytes


def _long_double(dtype: np.dtype[Any]) -> bool:
    """Whether `dtype` is, or holds a field of, a float or complex of no core size."""
    if dtype.names is not None:
        return any(_long_double(dtype.fields[n][0]) for n in dtype.names)  # type: ignore[index]
    if dtype.subdtype is not None:
        return _long_double(dtype.subdtype[0])
    return dtype.kind in "fc" and (dtype.kind, dtype.itemsize) not in _CORE_NAMES


def _is_v3_json(dtype: Any) -> bool:
    """A v3 `data_type`: a name numpy does not read the same way, or `{"name": ...}`
    (numpy's own dict spelling has "names" and "formats")."""
    if isinstance(dtype, str):
        return dtype in STRING_NAMES or dtype in BYTES_NAMES
    return isinstance(dtype, Mapping) and "name" in dtype


def _is_zarr_dtype(dtype: Any) -> bool:
    """A zarr-python 3 data type object (`zarr.dtype.*`), known by what it can do."""
    return (
        not isinstance(dtype, type | np.dtype)
        and callable(getattr(dtype, "to_json", None))
        and callable(getattr(dtype, "to_native_dtype", None))
    )


def _zarr_json(dtype: Any) -> Any:
    """A zarr-python data type's v3 JSON, its meaning only: zarr's warning that a type
    has no v3 specification yet is about writing v3, which the format decides here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dtype.to_json(zarr_format=3)


def _numpy_dtype(dtype: Any) -> np.dtype[Any]:
    try:
        return np.dtype(dtype)
    except (TypeError, ValueError) as error:
        raise MetadataError(
            f"dtype {_shown(dtype)} is not a data type (a numpy dtype, str, a Zarr v3 data "
            f"type name or object, or a zarr-python data type): {error}"
        ) from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
