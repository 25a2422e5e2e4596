"""`scale_offset`: `(x - offset) * scale` on encode, `x / scale + offset` on decode
(zarr-extensions `codecs/scale_offset`; zarr-python 3.4 writes it).

The arithmetic is the input data type's: floats stay in their width (overflow gives
infinity, as IEEE 754 does), integers never wrap. A value an integer type cannot hold
(an overflow, or a division by `scale` with a remainder) is a `CodecError` naming the
chunk, not a wrapped or truncated number. `offset` and `scale` are JSON scalars in the
input data type's fill value encoding ("NaN", "0x..." bit patterns included).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from aiozarr.codecs.base import ArrayToArrayCodec, ChunkSpec
from aiozarr.errors import CodecError, MetadataError
from aiozarr.metadata import dtypes, fill_value


class ScaleOffsetCodec(ArrayToArrayCodec):
    """Encode `(a - offset) * scale`, decode `a / scale + offset`, in `a`'s data type."""

    name = "scale_offset"
    # each element alone, in place: before `sharding_indexed`, inner chunks are read
    # alone where the fill value decodes back from its encoding (`keeps_fill`)
    decodes_parts = True
    elementwise = True

    def __init__(self, offset: Any = 0, scale: Any = 1) -> None:
        # zarr-python leaves out an offset of 0 and a scale of 1 (the whole configuration
        # where both are); the spec asks for both, so both are written.
        for field, value in (("offset", offset), ("scale", scale)):
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise MetadataError(f"field {field!r} must be a JSON scalar, got {value!r}")
        self.offset = _json_float(offset)
        self.scale = _json_float(scale)
        self._parsed: dict[np.dtype[Any], tuple[Any, Any]] = {}

    @classmethod
    def completed_config(cls, config: Mapping[str, Any], dtype: Any) -> dict[str, Any]:
        """`config` for a new array of `dtype`: an integral float given for an integer
        type (`2.0`) written as the JSON integer its fill value encoding asks for (no
        fraction or exponent part), which stricter readers need."""
        config = dict(config)
        if np.dtype(dtype).kind in "iu":
            for field in ("offset", "scale"):
                value = config.get(field)
                if isinstance(value, float) and value.is_integer():
                    config[field] = int(value)
        return config

    def configuration(self) -> dict[str, Any]:
        return {"offset": self.offset, "scale": self.scale}

    def validate(self, spec: ChunkSpec) -> None:
        if spec.dtype.kind not in "iuf":
            raise MetadataError(
                f"codec 'scale_offset' takes integer and floating-point data, not {spec.dtype}"
            )
        if self._values(spec.dtype)[1] == 0:
            raise MetadataError("codec 'scale_offset': field 'scale' must not be 0")

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """The fill value encoded: what a chunk of fill values is stored as."""
        return ChunkSpec(spec.shape, spec.dtype, self.encoded_fill(spec), spec.key)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        offset, scale = self._values(array.dtype)
        if array.dtype.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN, as IEEE 754
                return (array - offset) * scale
        if not array.size:
            return array.copy()
        ends = _extremes(array)
        _check_range(array.dtype, ends, lambda x: (x - int(offset)) * int(scale))
        return _exact(array, lambda a: (a - offset) * scale)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        offset, scale = self._values(array.dtype)
        if array.dtype.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                return array / scale + offset
        if not array.size:
            return array.copy()
        if np.any(array % scale):
            raise CodecError(
                f"codec 'scale_offset': a stored value leaves a non-zero remainder when "
                f"divided by scale {self.scale!r}: it has no {array.dtype} value"
            )
        ends = _extremes(array)
        _check_range(array.dtype, ends, lambda x: x // int(scale) + int(offset))
        if _fits(_bounds(ends, lambda x: x // int(scale)), array.dtype):
            return _exact(array, lambda a: a // scale + offset)
        # x // scale itself leaves the type (the type's minimum divided by -1)
        return (array.astype(object) // int(scale) + int(offset)).astype(array.dtype)

    def _values(self, dtype: np.dtype[Any]) -> tuple[Any, Any]:
        """`offset` and `scale` as scalars of `dtype`."""
        found = self._parsed.get(dtype)
        if found is None:
            name = dtypes.v3_name(dtypes.to_v3(dtype))
            found = tuple(
                _parse(field, value, dtype, name)
                for field, value in (("offset", self.offset), ("scale", self.scale))
            )
            self._parsed[dtype] = found
        return found


def _parse(field: str, value: Any, dtype: np.dtype[Any], name: str) -> Any:
    """`value` of `field` as a scalar of `dtype`, read as the spec asks: in the fill value
    encoding of the input data type; a `MetadataError` naming the field and what it takes."""
    try:
        return fill_value.parse_v3(value, dtype, name, "")
    except MetadataError as error:
        expected = str(error).partition("expected ")[2] or str(error)
        raise MetadataError(
            f"codec 'scale_offset': field {field!r} is {value!r}, no {dtype} value (the "
            f"fill value encoding of {name} takes {expected.split(', got ')[0]})"
        ) from None


def _json_float(value: Any) -> Any:
    """`value`, with a NaN or infinite float as its fill value encoding ("NaN",
    "Infinity", "-Infinity"): JSON has no such numbers, so a bare `NaN` makes the
    document unreadable to a strict JSON parser."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _extremes(array: np.ndarray) -> tuple[int, int]:
    """The least and greatest of `array`'s values (it has some), as Python ints."""
    return int(array.min()), int(array.max())


def _bounds(ends: tuple[int, int], step: Any) -> tuple[int, int]:
    """The least and greatest of `step(x)` over values between `ends`, for a monotonic
    `step` on Python ints (so no arithmetic wraps): its values at the extremes."""
    at = (step(ends[0]), step(ends[1]))
    return min(at), max(at)


def _fits(bounds: tuple[int, int], dtype: np.dtype[Any]) -> bool:
    info = np.iinfo(dtype)
    return int(info.min) <= bounds[0] and bounds[1] <= int(info.max)


def _check_range(dtype: np.dtype[Any], ends: tuple[int, int], step: Any) -> None:
    bounds = _bounds(ends, step)
    if not _fits(bounds, dtype):
        info = np.iinfo(dtype)
        value = bounds[0] if bounds[0] < info.min else bounds[1]
        raise CodecError(
            f"codec 'scale_offset': a value becomes {value}, outside the range of dtype "
            f"{dtype} [{info.min}, {info.max}]"
        )


def _exact(array: np.ndarray, arithmetic: Any) -> np.ndarray:
    """`arithmetic(array)` in `array`'s integer type, once its result is known to fit:
    subtraction, addition and multiplication wrap modulo 2**bits, so a step that
    leaves the type still ends on the right value; an exact division must not leave it."""
    return np.asarray(arithmetic(array), dtype=array.dtype)
