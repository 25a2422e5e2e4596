"""`cast_value`: each value converted to another data type by its value, and back on
decode (zarr-extensions `codecs/cast_value`; zarr-python 3.4 writes it, usually after
`scale_offset`, to store floats as small integers).

A value is first rounded to the target's precision (`rounding`, with no limit on the
exponent), then put in the target's range (`out_of_range`: absent is an error naming
the value; "clamp" gives an integer target's minimum or maximum and a float target
±inf, as zarr-python does; "wrap", integer targets only, is modulo 2**bits). NaN into
an integer is an error whatever `out_of_range` says; ±inf is out of an integer's range
(clamped to its ends, never wrapped). Conversions are exact: the rounding is decided
by comparing exact values, never through a second rounding. `scalar_map` (written by
zarr-python) maps given values before the cast: `{"encode": [[src, dst], ...],
"decode": [[dst, src], ...]}`, scalars in each data type's fill value JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aiozarr.codecs.base import ArrayToArrayCodec, ChunkSpec
from aiozarr.errors import CodecError, MetadataError
from aiozarr.metadata import dtypes, fill_value

ROUNDINGS = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
#: The spec's "error" is the same as leaving the member out (kept out of what is written).
OUT_OF_RANGE = ("error", "clamp", "wrap")
_WHERE = "codec 'cast_value'"
#: |n| up to this is exact in float64: any integer of it converts through float64.
_F8_EXACT = 2**53

Entries = tuple[tuple[Any, Any], ...]


class CastValueCodec(ArrayToArrayCodec):
    """Encode each value as its value in `data_type`; decode back to the input type."""

    name = "cast_value"
    # each element alone, in place: before `sharding_indexed`, inner chunks are read
    # alone where the fill value survives the cast there and back (`keeps_fill`)
    decodes_parts = True
    elementwise = True

    def __init__(
        self,
        data_type: Any,
        rounding: str = "nearest-even",
        out_of_range: str | None = None,
        scalar_map: Any = None,
    ) -> None:
        # errors here are prefixed with the codec's name by `get_codec`
        target = dtypes.parse_v3(data_type, "configuration", "data_type")
        if target.kind not in "iuf":
            raise MetadataError(
                f"invalid target data type {data_type!r}: cast_value only supports "
                f"integer and floating-point data types, not {target}"
            )
        if rounding not in ROUNDINGS:
            raise MetadataError(f"field 'rounding' must be one of {ROUNDINGS}, got {rounding!r}")
        if out_of_range is not None and out_of_range not in OUT_OF_RANGE:
            raise MetadataError(
                f"field 'out_of_range' must be one of {OUT_OF_RANGE}, got {out_of_range!r}"
            )
        if out_of_range == "wrap" and target.kind == "f":
            raise MetadataError(
                f"out_of_range 'wrap' is only valid for integer target types, not {target}"
            )
        self.data_type = data_type
        self.target = target
        self.rounding = rounding
        self.out_of_range = None if out_of_range == "error" else out_of_range
        self.scalar_map = scalar_map
        self._pairs = _scalar_map_pairs(scalar_map)
        self._entries: dict[np.dtype[Any], tuple[Entries, Entries]] = {}

    def configuration(self) -> dict[str, Any]:
        # as zarr-python writes it: the default rounding and an absent out_of_range left out
        config: dict[str, Any] = {"data_type": self.data_type}
        if self.rounding != "nearest-even":
            config["rounding"] = self.rounding
        if self.out_of_range is not None:
            config["out_of_range"] = self.out_of_range
        if self.scalar_map is not None:
            config["scalar_map"] = self.scalar_map
        return config

    def validate(self, spec: ChunkSpec) -> None:
        if spec.dtype.kind not in "iuf":
            raise MetadataError(
                f"{_WHERE} only supports integer and floating-point data types, "
                f"not source dtype {spec.dtype}"
            )
        self._scalars(spec.dtype)

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """The target data type, and the fill value encoded: what a chunk of fill values
        is stored as."""
        return ChunkSpec(spec.shape, self.target, self.encoded_fill(spec), spec.key)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        entries = self._scalars(array.dtype)[0]
        return self._cast(np.asarray(array), self.target, entries)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        entries = self._scalars(spec.dtype)[1]
        return self._cast(np.asarray(array), spec.dtype, entries)

    def _cast(self, values: np.ndarray, target: np.dtype[Any], entries: Entries) -> np.ndarray:
        masks = [_matches(values, key) for key, _ in entries]
        if masks:
            values = values.copy()
            for mask in masks:  # a mapped value is not cast: a harmless stand-in is
                values[mask] = 0
        out = cast(values, target, self.rounding, self.out_of_range)
        for mask, (_, value) in zip(masks, entries, strict=True):
            out[mask] = value  # later entries win, as in zarr-python's dict
        return out

    def _scalars(self, source: np.dtype[Any]) -> tuple[Entries, Entries]:
        """`scalar_map`'s (encode, decode) entries as scalars of their data types: an
        encode key is a `source` value and its value a target one; decode the reverse."""
        found = self._entries.get(source)
        if found is None:
            found = (
                self._side("encode", source, self.target),
                self._side("decode", self.target, source),
            )
            self._entries[source] = found
        return found

    def _side(self, direction: str, keys: np.dtype[Any], values: np.dtype[Any]) -> Entries:
        return tuple(
            (_scalar(k, keys, f"{direction} key"), _scalar(v, values, f"{direction} value"))
            for k, v in self._pairs.get(direction, ())
        )


def _scalar_map_pairs(scalar_map: Any) -> dict[str, list[tuple[Any, Any]]]:
    """The JSON pairs of each direction; a `MetadataError` for any other shape."""
    if scalar_map is None:
        return {}
    shape = 'an object {"encode": [[a, b], ...], "decode": [[a, b], ...]}'
    if not isinstance(scalar_map, Mapping) or set(scalar_map) - {"encode", "decode"}:
        raise MetadataError(f"field 'scalar_map' must be {shape}, got {scalar_map!r}")
    pairs: dict[str, list[tuple[Any, Any]]] = {}
    for direction, entries in scalar_map.items():
        if not isinstance(entries, list) or not all(
            isinstance(e, list | tuple) and len(e) == 2 for e in entries
        ):
            raise MetadataError(
                f"field 'scalar_map' member {direction!r} must be a list of "
                f"[a, b] pairs, got {entries!r}"
            )
        pairs[direction] = [(a, b) for a, b in entries]
    return pairs


def _scalar(value: Any, dtype: np.dtype[Any], label: str) -> Any:
    name = dtypes.v3_name(dtypes.to_v3(dtype))
    try:
        return fill_value.parse_v3(value, dtype, name, "")
    except MetadataError as error:
        expected = str(error).partition("expected ")[2]
        raise MetadataError(
            f"{_WHERE}: scalar_map {label} {value!r} is not representable in dtype {dtype} "
            f"(expected {expected})"
        ) from None


def _matches(values: np.ndarray, key: Any) -> np.ndarray:
    """Where `values` equal `key` (by value: -0.0 is 0.0, and a NaN key is every NaN)."""
    if isinstance(key, np.floating) and np.isnan(key):
        return np.isnan(values)
    return np.asarray(values == key)


def cast(
    values: np.ndarray, target: np.dtype[Any], rounding: str, out_of_range: str | None
) -> np.ndarray:
    """`values` as `target`: rounded (`rounding`, one of `ROUNDINGS`), then put in range
    (`out_of_range`: None refuses, "clamp", "wrap"); a `CodecError` names a value it
    cannot convert."""
    source = values.dtype
    if target.kind in "iu":
        if source.kind == "f":
            return _float_to_int(values, target, rounding, out_of_range)
        return _int_to_int(values, target, out_of_range)
    if source.kind == "f" and source.itemsize <= target.itemsize:
        return values.astype(target)  # exact
    if source.kind in "iu" and _holds(target, source):
        return values.astype(target)  # exact
    return _to_float(values, target, rounding, out_of_range)


def _out_of_range(value: Any, target: np.dtype[Any], low: Any, high: Any, modes: str) -> CodecError:
    return CodecError(
        f"{_WHERE}: value {value!r} is out of range of dtype {target} [{low}, {high}]; "
        f"set out_of_range to {modes} to store it"
    )


def _int_to_int(values: np.ndarray, target: np.dtype[Any], out_of_range: str | None) -> np.ndarray:
    source, to = np.iinfo(values.dtype), np.iinfo(target)
    low, high = max(int(to.min), int(source.min)), min(int(to.max), int(source.max))
    below = values < values.dtype.type(low)
    above = values > values.dtype.type(high)
    out = values.astype(target)  # numpy's integer cast keeps the low bits: a wrap
    if below.any() or above.any():
        if out_of_range is None:
            bad = values[below | above][0]
            raise _out_of_range(int(bad), target, to.min, to.max, "'clamp' or 'wrap'")
        if out_of_range == "clamp":
            out[below], out[above] = to.min, to.max
    return out


def _round_to_integer(x: np.ndarray, rounding: str) -> np.ndarray:
    """float64 `x` rounded to integers (±inf kept)."""
    if rounding == "nearest-even":
        return np.rint(x)
    if rounding == "towards-zero":
        return np.trunc(x)
    if rounding == "towards-positive":
        return np.ceil(x)
    if rounding == "towards-negative":
        return np.floor(x)
    whole = np.trunc(x)
    with np.errstate(invalid="ignore"):  # inf - inf
        away = np.abs(x - whole) >= 0.5  # x - trunc(x) is exact
    return whole + np.copysign(away, x)


def _float_to_int(
    values: np.ndarray, target: np.dtype[Any], rounding: str, out_of_range: str | None
) -> np.ndarray:
    x = values.astype(np.float64)  # exact
    if np.isnan(x).any():
        raise CodecError(
            f"{_WHERE}: NaN has no {target} value, whatever out_of_range says "
            "(a scalar_map entry can give it one)"
        )
    info = np.iinfo(target)
    rounded = _round_to_integer(x, rounding)
    # the bounds as exact floats: the least value, and the power of two past the greatest
    low, past = float(int(info.min)), float(int(info.max) + 1)
    inside = (rounded >= low) & (rounded < past)
    out = np.where(inside, rounded, 0).astype(target)
    if inside.all():
        return out
    if out_of_range is None:
        raise _out_of_range(float(x[~inside][0]), target, info.min, info.max, "'clamp' or 'wrap'")
    if out_of_range == "clamp":  # ±inf too: out of range of a finite type (the spec)
        out[rounded >= past], out[rounded < low] = info.max, info.min
        return out
    outside = rounded[~inside]
    if np.isinf(outside).any():
        raise CodecError(f"{_WHERE}: an infinite value has no wrapped value in {target}")
    out[~inside] = _wrapped(outside).astype(target)
    return out


def _wrapped(whole: np.ndarray) -> np.ndarray:
    """Integral float64 values modulo 2**64, as int64 (two's complement): each exact."""
    modulus = 2.0**64
    rest = np.fmod(whole, modulus)  # exact, in (-2**64, 2**64)
    # each shift is exact (Sterbenz): both sides lie within a factor of two
    rest = np.where(rest >= 2.0**63, rest - modulus, rest)
    rest = np.where(rest < -(2.0**63), rest + modulus, rest)
    return rest.astype(np.int64)


def _holds(target: np.dtype[Any], source: np.dtype[Any]) -> bool:
    """Whether float `target` holds every integer of `source` exactly."""
    info, digits = np.iinfo(source), np.finfo(target).nmant + 1
    return -(2**digits) <= int(info.min) and int(info.max) <= 2**digits


def _to_float(
    values: np.ndarray, target: np.dtype[Any], rounding: str, out_of_range: str | None
) -> np.ndarray:
    """Narrowing floats, or integers the target cannot all hold, to float `target`."""
    x = values.astype(np.float64)  # exact for floats, and for integers up to 2**53
    out = _round_floats(x, target, rounding)
    if values.dtype.kind in "iu" and values.dtype.itemsize == 8:
        big = (values > values.dtype.type(_F8_EXACT)) | (values < -_F8_EXACT)
        if big.any():
            out[big] = [_int_to_float(int(v), target, rounding) for v in values[big]]
    overflow = np.isinf(out) & np.isfinite(x)
    # "clamp": ±inf, the float type's ends (zarr-python's choice); "wrap" (a decode to
    # a float input type) has no modulus: refused
    if overflow.any() and out_of_range != "clamp":
        top = np.finfo(target).max
        raise _out_of_range(values[overflow][0].item(), target, -top, top, "'clamp' (±inf)")
    return out


def _round_floats(x: np.ndarray, target: np.dtype[Any], rounding: str) -> np.ndarray:
    """float64 `x` rounded to `target`'s precision, with no limit on the exponent: a
    value whose rounding passes the largest finite value is ±inf."""
    with np.errstate(over="ignore"):
        out = x.astype(target)  # round to nearest, ties to even (IEEE 754)
    if rounding == "nearest-even":
        return out
    finite = np.isfinite(x)
    with np.errstate(over="ignore", invalid="ignore"):
        near = out.astype(np.float64)
        if rounding == "nearest-away":
            toward_x = np.nextafter(out, np.where(x > near, np.inf, -np.inf).astype(target))
            other = toward_x.astype(np.float64)
            tie = finite & (near != x) & (x - near == other - x)
            grow = tie & (np.abs(other) > np.abs(near))
            out[grow] = toward_x[grow]
            return out
        if rounding == "towards-positive":
            step, direction = finite & (near < x), np.inf
        elif rounding == "towards-negative":
            step, direction = finite & (near > x), -np.inf
        else:
            step, direction = finite & (np.abs(near) > np.abs(x)), 0.0
        # from ±inf (an overflow) too, to ±max, where |x| is below 2**(emax + 1)
        step &= np.abs(x) < _past_top(target)
        toward = np.array(direction, dtype=target)
        out[step] = np.nextafter(out[step], toward)
    return out


def _past_top(target: np.dtype[Any]) -> float:
    """The power of two past `target`'s largest finite value (inf for float64)."""
    exponent = int(np.finfo(target).maxexp)
    return float("inf") if exponent >= 1024 else 2.0**exponent


def _int_to_float(n: int, target: np.dtype[Any], rounding: str) -> float:
    """The integer `n` rounded to float `target` (±inf past its largest finite value)."""
    digits = np.finfo(target).nmant + 1
    size = abs(n)
    shift = size.bit_length() - digits
    if shift > 0:
        kept, rest, half = size >> shift, size & ((1 << shift) - 1), 1 << (shift - 1)
        up = {
            "nearest-even": rest > half or (rest == half and kept & 1 == 1),
            "nearest-away": rest >= half,
            "towards-zero": False,
            "towards-positive": rest > 0 and n > 0,
            "towards-negative": rest > 0 and n < 0,
        }[rounding]
        size = (kept + up) << shift
    if size > int(np.finfo(target).max):
        return float("inf") if n > 0 else float("-inf")
    return float(size if n > 0 else -size)
