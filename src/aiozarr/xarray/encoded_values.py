"""A variable's CF encoding checked against the values it encodes.

xarray's encoder casts with numpy's casts, which wrap: `dtype="int8"` stores 300 as 44,
`scale_factor=0.01` into int16 stores 1000.0 as -310.72, times with
`units="nanoseconds since 1970-01-01"` beyond 2262 come back as NaT. So `to_zarr`
decodes what it encoded, with xarray's own decoder as a reader will (the variable's own
units, scale, offset and `_Unsigned`; times in the unit they were given in; for an
array already stored, its stored units, calendar and `_Unsigned`, which a reader uses
whatever the encoder chose), and refuses with
`ValueOutOfRangeError` any value that does not come back within the encoding's
resolution: one step of an integer encoding (the `scale_factor`, or one unit of time),
or a float encoding's rounding (times and time spans: one unit of their units; float32
seconds since 1970 are 128 s apart). NaN and NaT must come back missing (an integer encoding
without a `_FillValue` cannot hold them); a value equal to the `_FillValue` may come back
missing, as CF masking means. Inf and NaN given as such stay allowed in float encodings.

Strings stored with a fixed width (numpy's `U` and `S`: an append to, or a write into,
an array stored that way, or a `dtype` encoding) are cut by the same casts: a string
longer than the width is refused with `StringTooLongError`, as xarray refuses an append
of wider strings.

Other variables (objects but strings, booleans: none can wrap), and times decoded to
non-numpy calendars, are not checked. A dask-backed variable is checked block by block
as it is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.coders import CFDatetimeCoder, CFTimedeltaCoder
from xarray.namedarray.utils import is_duck_dask_array

from aiozarr.errors import InvalidValueError, ValueOutOfRangeError
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.nodes.casting import string_lengths

__all__ = [
    "FillValueUnreadableError",
    "StringTooLongError",
    "cf_encoded",
    "checked_encoding",
    "v3_fill_attribute",
]

_CF_KEYS = ("units", "calendar", "scale_factor", "add_offset", "_FillValue", "missing_value")
_FILL_KEYS = ("_FillValue", "missing_value")
_STORED_KEYS = ("units", "calendar", "_Unsigned")
_NUMERIC = "iufcmM"  # not booleans: no cast of theirs wraps
_TIME_UNITS = ("s", "ms", "us", "ns")


class FillValueUnreadableError(InvalidValueError, ValueError):
    """A `_FillValue` a Zarr v3 array's attributes cannot hold so that xarray reads it
    back. Also a `ValueError`, as xarray's refusal of some of them."""


def v3_fill_attribute(name: str, value: Any, dtype: np.dtype[Any]) -> Any:
    """`value`, the `_FillValue` of the variable `name` stored as `dtype`, as a v3
    array's attribute (xarray's `FillValueCoder`), once it decodes back: xarray's
    decoder takes no fixed-width strings (`<U3`, `|S3`), and a group holding one opened
    in neither engine ("Failed to decode fill_value"); refused, naming the variable."""
    from xarray.backends.zarr import FillValueCoder

    try:
        encoded = FillValueCoder.encode(value, dtype)
        FillValueCoder.decode(encoded, dtype)
    except (TypeError, ValueError) as error:
        raise FillValueUnreadableError(
            f"variable {name!r}: its _FillValue {value!r} for {dtype} values cannot be "
            f"stored in a Zarr v3 array so that it reads back ({error}); leave the "
            "_FillValue out of its encoding, or write zarr_format=2"
        ) from error
    return encoded


class StringTooLongError(ValueOutOfRangeError, ValueError):
    """A string is longer than the fixed width it is stored with (`<U2`, `|S2`): it would
    be cut. Also a `ValueError`, as xarray's refusal of an append of wider strings."""


def cf_encoded(var: xr.Variable, name: str, zarr_format: int) -> xr.Variable:
    """xarray's encoding of `var`; what its coders cannot apply (strings appended to a
    number array: "ufunc 'rint' not supported"; a `_FillValue` of "abc" for floats) as
    an `InvalidValueError` naming the variable."""
    from xarray.backends.zarr import encode_zarr_variable

    var = _variable_length(var, zarr_format)
    with np.errstate(over="ignore", invalid="ignore"):  # refused after, naming values
        try:
            return encode_zarr_variable(var, name=name, zarr_format=zarr_format)  # type: ignore[arg-type]
        except (TypeError, ValueError, KeyError) as error:  # time spans as times: KeyError
            units = var.encoding.get("units")
            raise InvalidValueError(
                f"variable {name!r}: values of dtype {var.dtype} cannot be encoded as "
                f"{var.encoding.get('dtype', var.dtype)}"
                + ("" if units is None else f" with units {units!r}")
                + f": {error}"
            ) from error


def _variable_length(var: xr.Variable, zarr_format: int) -> xr.Variable:
    """A variable of numpy's `StringDType` as object strings, for a v2 array: xarray's
    encoder would cut it to the fixed width of its longest string (`<U3`), keeping a
    v2 `vlen-utf8` filter of its encoding (unreadable: zarr-python finds no data type,
    aiozarr decodes too few bytes); as objects it is stored variable-length
    (`vlen-utf8`), as it was read, and reads back as strings of any length. An encoding
    `dtype` of fixed-width strings (`<U5`, `S1`) is kept."""
    wanted = var.encoding.get("dtype")
    if zarr_format != 2 or var.dtype.kind != "T":
        return var
    if wanted is not None and np.dtype(wanted).kind not in "TO":
        return var
    vlen = np.dtype(object, metadata={"element_type": str})  # xarray's: no dtype to infer
    out = var.astype(vlen)
    out.encoding = {**var.encoding, "dtype": vlen}
    return out


def checked_encoding(
    name: str,
    raw: xr.Variable,
    encoded: xr.Variable,
    array: ArrayMetadata | None = None,
    zarr_format: int = 3,
) -> xr.Variable:
    """`encoded` (xarray's encoding of `raw`), once every value is known to read back as
    `raw` holds it; raises `ValueOutOfRangeError` naming the variable, the values and
    the encoding's range (`StringTooLongError` for a string cut to a fixed width). A
    dask-backed `encoded` comes back checking each block. `array`: the one `encoded`
    goes into, when it is already stored (its attributes' units, calendar and
    `_Unsigned` decode it, not the encoder's); `zarr_format`: the format written (v2
    stores the `_FillValue` as the array's `fill_value`, of its type)."""
    check: Any
    stored = None if array is None else array.attributes
    if (
        stored is not None
        and raw.dtype.kind not in "mMO"
        and _holds_times(stored)
        and not _same_time_encoding(raw.attrs, stored)
    ):
        raise ValueOutOfRangeError(
            f"variable {name!r} stores times (units {stored.get('units')!r}): {raw.dtype} "
            "values appended would read back as times, not as the numbers given"
        )
    if encoded.dtype.kind in "mM" and raw.dtype.kind not in "mMO":
        raise InvalidValueError(
            f"variable {name!r}: {raw.dtype} values cannot be stored as {encoded.dtype} "
            "(numbers would read back as times): leave out the encoding's dtype"
        )
    if encoded.dtype.kind in "US" and raw.dtype.kind in "USO" and raw.shape == encoded.shape:
        check = _WidthCheck(name, raw.dtype, encoded.dtype)
    elif _cast_across_kinds(raw.dtype, encoded.dtype):
        check = _KindCheck(name, encoded.dtype)
    elif raw.dtype.kind not in _NUMERIC or encoded.dtype.kind not in _NUMERIC:
        return encoded
    else:
        attrs = _applied_attrs(raw, encoded, stored)
        check = _Check(name, raw.dtype, encoded.dtype, attrs, typed_fill=zarr_format == 2)
    if check.not_compared:
        return encoded
    if not is_duck_dask_array(encoded.data):
        check(np.asarray(encoded.values), np.asarray(raw.values))
        return encoded
    import dask.array as da

    data = da.map_blocks(
        _checked_block, encoded.data, raw.data, check, encoded.dtype, dtype=encoded.dtype
    )
    return xr.Variable(encoded.dims, data, encoded.attrs, encoded.encoding)


def _cast_across_kinds(raw: np.dtype[Any], encoded: np.dtype[Any]) -> bool:
    """Whether values go into booleans or strings from another kind."""
    if encoded.kind == "b":
        return raw.kind != "b"
    return encoded.kind in "US" and raw.kind not in "USO"


def _same_time_encoding(attrs: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether numbers carrying `attrs` are times already encoded as `stored` encodes
    them (read with `decode_times=False`, appended with their units): they read back as
    given, as numbers and as times alike."""
    return (
        all(attrs.get(k) == stored.get(k) for k in ("units", "calendar", "dtype"))
        and attrs.get("units") is not None
    )


def _holds_times(attrs: Mapping[str, Any]) -> bool:
    """Whether a stored variable's attributes decode it as times or time spans."""
    return " since " in str(attrs.get("units", "")) or str(attrs.get("dtype", "")).startswith(
        "timedelta"
    )


def _checked_block(
    encoded: np.ndarray, raw: np.ndarray, check: Any, dtype: np.dtype[Any]
) -> np.ndarray:
    """One block, checked as stored: cast to the variable's dtype, as the store casts
    it (xarray's lazy time encoder gives float64 or int64 blocks for a float32 or int32
    encoding: checked before the cast, float32 times rounded by the store passed)."""
    with np.errstate(over="ignore", invalid="ignore"):  # refused by the check, by value
        stored = np.asarray(encoded).astype(dtype, copy=False)
    check(stored, raw)
    return stored


def _applied_attrs(
    raw: xr.Variable, encoded: xr.Variable, stored: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The CF attributes a reader decodes `encoded` with: those the encoder applied (not
    those the variable already carried, which the encoder leaves alone), `_Unsigned`
    however it came (stored as it is, it decodes), and the stored array's units,
    calendar and `_Unsigned`, which a reader uses whatever units the encoder switched to
    (days to hours, for times finer than a day)."""
    keys = (*_CF_KEYS, "dtype")
    attrs = {k: encoded.attrs[k] for k in keys if k in encoded.attrs and k not in raw.attrs}
    if "_Unsigned" in encoded.attrs:
        attrs["_Unsigned"] = encoded.attrs["_Unsigned"]
    if stored is not None:  # a reader decodes with the stored attributes only
        for key in _STORED_KEYS:
            if key in stored:
                attrs[key] = stored[key]
            else:
                attrs.pop(key, None)
    if encoded.dtype.kind not in "iu":  # a reader ignores it (with a warning)
        attrs.pop("_Unsigned", None)
    return attrs


class _Check:
    """The check of one variable's values: how its encoding decodes, and its step."""

    def __init__(
        self,
        name: str,
        raw: np.dtype[Any],
        encoded: np.dtype[Any],
        attrs: Mapping[str, Any],
        typed_fill: bool = False,
    ) -> None:
        self.name, self.raw, self.encoded, self.attrs = name, raw, encoded, dict(attrs)
        self.typed_fill = typed_fill  # the _FillValue comes back of the stored type (v2)
        self.unit: str | None = None
        if raw.kind in "mM":
            unit = np.datetime_data(raw)[0]
            self.unit = unit if unit in _TIME_UNITS else "s"
        self.fills = [attrs[k] for k in _FILL_KEYS if k in attrs]
        self.plain = {k: v for k, v in self.attrs.items() if k not in _FILL_KEYS}
        decoded = self._decode(np.array([0, 1], dtype=encoded), self.plain)
        # times decoded to cftime objects (another calendar): not compared
        self.not_compared = self.unit is not None and decoded.dtype.kind == "O"
        ends = np.zeros(2) if self.not_compared else self._numbers(decoded)
        self.origin = ends[0]
        self.step = abs(ends[1] - ends[0]) if encoded.kind in "iu" or self.unit else 0.0

    def _decode(self, values: np.ndarray, attrs: Mapping[str, Any]) -> np.ndarray:
        """`values` decoded as a reader decodes them (times in the raw unit). A v2 reader
        gets the `_FillValue` as the array's `fill_value`, of its integer type, which
        `_Unsigned` reinterprets (uint8 255 as int8 -1; as a Python 255 it overflows)."""
        attrs = dict(attrs)
        if self.typed_fill and "_FillValue" in attrs:
            attrs["_FillValue"] = _as_stored(attrs["_FillValue"], self.encoded)
        probe = xr.Variable(tuple(f"d{i}" for i in range(values.ndim)), values, attrs)
        times: Any = False
        deltas: Any = False
        if self.unit is not None:
            times = CFDatetimeCoder(time_unit=self.unit)  # type: ignore[arg-type]
            deltas = CFTimedeltaCoder(time_unit=self.unit)  # type: ignore[arg-type]
        decoded = conventions.decode_cf_variable(
            self.name, probe, decode_times=times, decode_timedelta=deltas
        )
        return np.asarray(decoded.values)

    def _numbers(self, values: np.ndarray) -> np.ndarray:
        """Values as numbers to compare: times as float ticks of the raw unit (NaT:
        NaN), numbers as floats (complex stays complex)."""
        if values.dtype.kind in "mM":
            ticks = values.astype(f"{values.dtype.kind}8[{self.unit}]")
            out = ticks.view(np.int64).astype(np.float64)
            out[np.isnat(ticks)] = np.nan
            return out
        return values.astype(np.result_type(values.dtype, np.float64), copy=False)

    def __call__(self, encoded: np.ndarray, raw: np.ndarray) -> None:
        """Refuse the values of `raw` that `encoded` does not give back."""
        encoded, raw = np.ravel(encoded), np.ravel(raw)
        try:
            decoded = self._decode(encoded, self.attrs)
        except (ValueError, OverflowError) as error:  # out of bounds of the raw unit
            raise ValueOutOfRangeError(
                f"variable {self.name!r}: its values do not read back from "
                f"{self._described()} ({error}){self._limits()}"
            ) from None
        if self.unit is not None and decoded.dtype.kind not in "mM":  # cftime: beyond numpy
            raise ValueOutOfRangeError(
                f"variable {self.name!r}: its values do not read back as {self.raw}{self._limits()}"
            )
        want, got = self._numbers(raw), self._numbers(decoded)
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: NaN, decided below
            diff = np.subtract(got, want)
            diff = np.abs(diff, out=diff) if diff.dtype.kind == "f" else np.abs(diff)
        if self.encoded.kind in "iu" or self.unit is not None:  # integers wrap; times
            with np.errstate(invalid="ignore"):  # in floats round by more than a unit
                wrong = diff > self._tolerance(decoded.dtype, got, want)
        else:  # a float encoding rounds: only an overflow to inf is wrong
            wrong = np.isinf(diff)
        if want.dtype.kind == "c" and got.dtype.kind != "c":  # the imaginary part lost
            with np.errstate(invalid="ignore"):  # (an integer's tolerance is not for it)
                wrong |= np.nan_to_num(want.imag) != 0
        odd = np.isnan(diff)  # NaN on either side, or inf on both: decided one by one
        if odd.any():
            where = np.flatnonzero(odd)
            lost, missing = np.isnan(want.flat[where]), np.isnan(got.flat[where])
            same = got.flat[where] == want.flat[where]
            fill = self._is_fill(raw.flat[where])
            wrong.flat[where] = ~lost & ~same & (~missing | ~fill)
            kept = lost & ~missing
            if kept.any() and not wrong.any():
                raise ValueOutOfRangeError(self._no_missing(decoded.flat[where[kept]]))
        if wrong.any():
            raise ValueOutOfRangeError(self._out_of_range(raw[wrong], want[wrong], got[wrong]))

    def _tolerance(self, decoded: np.dtype[Any], got: np.ndarray, want: np.ndarray) -> Any:
        """How far an integer encoding may give a value back from the one given: one
        step (it rounds), and the float arithmetic of scaling over its whole range; for
        times, decoded exactly, only that of their ticks compared as floats (a bound over
        the range of int64 would pass times off by years)."""
        floats = [np.finfo(t) for t in (np.dtype(np.float64), decoded) if t.kind in "fc"]
        rel = 4 * max(float(f.eps) for f in floats)
        if self.unit is not None:
            return float(self.step) + rel * (np.abs(got) + np.abs(want))
        limits = np.iinfo(self.encoded)
        span = max(abs(int(limits.min)), abs(int(limits.max))) * float(self.step)
        return float(self.step) + rel * (span + abs(float(self.origin)))

    def _is_fill(self, raw: np.ndarray) -> np.ndarray:
        """Where `raw` holds a fill value (masked on reading, by CF's rule); none where
        the encoding packs `raw` (its fill value is a packed one)."""
        hit = np.zeros(raw.shape, dtype=bool)
        packed = "scale_factor" in self.attrs or "add_offset" in self.attrs
        if raw.dtype.kind not in "mM" and not packed:
            for fill in self.fills:
                for value in np.atleast_1d(fill):
                    hit |= raw == value
        return hit

    def _described(self) -> str:
        """The encoding, as the variable's encoding names it."""
        keys = ("units", "scale_factor", "add_offset")
        parts = [f"{k}={self.attrs[k]!r}" for k in keys if k in self.attrs]
        return f"{self.encoded}" + (f" with {', '.join(parts)}" if parts else "")

    def _limits(self) -> str:
        """', which holds <least> to <greatest>': the encoding's range."""
        ends = self._ends()
        return "" if ends is None else f", which holds {ends[0]!s} to {ends[1]!s}"

    def _ends(self) -> np.ndarray | None:
        """The least and greatest values the encoding holds, in the variable's terms
        where those can be decoded (else as stored); None for a type with no range."""
        if self.encoded.kind in "fc":
            info = np.finfo(self.encoded)  # a complex type: the range of each part
            ends = np.array([info.min, info.max], dtype=info.dtype)
        elif self.encoded.kind in "iu":
            ends = self._integer_ends()
        else:
            return None
        try:
            decoded = self._decode(ends, self.plain)
        except (ValueError, OverflowError):
            return ends
        return ends if decoded.dtype.kind in "mM" and np.isnat(decoded).any() else decoded

    def _integer_ends(self) -> np.ndarray:
        """The stored integers that decode to the least and greatest values: the ends of
        the encoded type, or with `_Unsigned` those of the type a reader takes it as
        (int8 as uint8: 0 and -1)."""
        kind = self.encoded.kind
        if self.attrs.get("_Unsigned") == ("true" if kind == "i" else "false"):
            kind = "u" if kind == "i" else "i"
        limits = np.iinfo(np.dtype(f"{kind}{self.encoded.itemsize}"))
        least = limits.min + 1 if self.unit is not None else limits.min  # the least: NaT
        return np.array([least, limits.max], dtype=limits.dtype).astype(self.encoded)

    def _out_of_range(self, bad: np.ndarray, numbers: np.ndarray, back: np.ndarray) -> str:
        """Why `bad` (as `numbers`) would not read back as given (`back`)."""
        low, high = bad.min(), bad.max()
        shown = f"{low!s}" if low == high else f"values from {low!s} to {high!s}"
        ends = self._ends()
        if bad.dtype.kind in "mM" and ends is not None and ends.dtype.kind == bad.dtype.kind:
            (least, greatest), seconds = _seconds(ends), _seconds(bad)  # one unit overflows
            if np.isnan(back).all() and least <= seconds.min() <= seconds.max() <= greatest:
                return (  # xarray's encoder gave NaT for times of another resolution
                    f"variable {self.name!r}: {shown} ({bad.dtype}) would be stored as NaT "
                    f"by xarray's encoder with {self._described()} and read back as "
                    "missing; give coarser units, or the values as datetime64[ns] / "
                    "timedelta64[ns]"
                )
        if self.fills and self.unit is None and self._within(numbers):
            return (  # in range, but encoded as the fill value: it would read back missing
                f"variable {self.name!r}: {shown} would be stored as the _FillValue "
                f"{self.fills[0]!s} of {self._described()} and read back as missing"
            )
        steps = ""
        if self.unit is not None:  # floats: float32 seconds since 1970 are 128 s apart
            steps = " (whole steps of its units only)"
            if self.encoded.kind in "fc":
                steps = " (to within one of its units; its precision is coarser there)"
        return (
            f"variable {self.name!r}: {shown} cannot be stored as "
            f"{self._described()}{steps}{self._limits()}"
        )

    def _within(self, numbers: np.ndarray) -> bool:
        """Whether every number lies in the range of an integer encoding."""
        if self.encoded.kind not in "iu" or numbers.dtype.kind == "c":
            return False
        ends = self._decode(self._integer_ends(), self.plain)
        low, high = sorted(float(e) for e in ends)
        return bool(((numbers >= low) & (numbers <= high)).all())

    def _no_missing(self, stored: np.ndarray) -> str:
        missing = "NaT" if self.unit is not None else "NaN"
        return (
            f"variable {self.name!r}: {missing} cannot be stored as {self._described()} "
            f"without a _FillValue (it would read back as {stored.flat[0]}); give the "
            "variable a _FillValue in its encoding"
        )


class _KindCheck:
    """The check of numbers (or times) cast to booleans or strings, as numpy casts them
    (3 to True, 2**40 into two characters to '10'): each must read back as given."""

    not_compared = False

    def __init__(self, name: str, encoded: np.dtype[Any]) -> None:
        self.name, self.encoded = name, encoded

    def __call__(self, encoded: np.ndarray, raw: np.ndarray) -> None:
        try:
            if encoded.dtype.kind in "US" and raw.dtype.kind == "b":
                # as text: False is 'False' (which numpy casts back to True)
                same = encoded == raw.astype(encoded.dtype.kind)
            else:
                back = encoded.astype(raw.dtype)
                same = (back == raw) | (
                    np.isnan(back) & np.isnan(raw) if raw.dtype.kind in "fc" else False
                )
        except (TypeError, ValueError):  # 'na' is no number
            same = np.zeros(raw.shape, dtype=bool)
        if not np.all(same):
            first = np.flatnonzero(~np.broadcast_to(same, raw.shape))[0]
            raise ValueOutOfRangeError(
                f"variable {self.name!r}: {raw.dtype} value {raw.flat[first].item()!r} stored as "
                f"{self.encoded} would read back as {encoded.flat[first].item()!r}"
            )


class _WidthCheck:
    """The check of strings cast to a fixed width: none may be longer than the width."""

    def __init__(self, name: str, raw: np.dtype[Any], encoded: np.dtype[Any]) -> None:
        self.name, self.encoded = name, encoded
        self.width = encoded.itemsize // (4 if encoded.kind == "U" else 1)
        # as wide as the strings given: none can be cut
        self.not_compared = raw.kind == encoded.kind and raw.itemsize <= encoded.itemsize

    def __call__(self, encoded: np.ndarray, raw: np.ndarray) -> None:
        """Refuse the strings of `raw` longer than the width (objects but strings pass)."""
        del encoded  # cut already: the lengths are those of `raw`
        values = np.ravel(raw)
        lengths = string_lengths(values)
        if lengths.size and lengths.max() > self.width:
            longest = np.asarray(values[int(np.argmax(lengths))]).item()  # str or bytes
            raise StringTooLongError(
                f"variable {self.name!r}: {longest!r} ({lengths.max()} {self._unit}) does "
                f"not fit its dtype {self.encoded} ({self.width} at most) and would be cut; "
                "store the variable with a wider or variable-length string dtype"
            )

    @property
    def _unit(self) -> str:
        return "bytes" if self.encoded.kind == "S" else "characters"


def _as_stored(fill: Any, dtype: np.dtype[Any]) -> Any:
    """An integer fill value as a value of the integer `dtype`, where it is one."""
    if dtype.kind not in "iu" or np.ndim(fill) or not isinstance(fill, int | np.integer):
        return fill
    info = np.iinfo(dtype)
    return dtype.type(fill) if info.min <= int(fill) <= info.max else fill


def _seconds(times: np.ndarray) -> np.ndarray:
    """Times or durations as float seconds since the epoch (or as a length)."""
    unit, count = np.datetime_data(times.dtype)
    return times.view(np.int64) * (count * (np.timedelta64(1, unit) / np.timedelta64(1, "s")))
