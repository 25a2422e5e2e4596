"""A value to store in an array: the one conversion every write goes through, before
anything is written (pure)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from aiozarr.engine import entry as engine
from aiozarr.errors import InvalidValueError, ValueOutOfRangeError, ValueShapeError
from aiozarr.nodes import casting


def as_value(
    value: Any,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    *,
    name: str,
    what: Callable[[], str],
    items: type | None = None,
) -> np.ndarray:
    """`value` in `dtype`, broadcast to `shape` (`casting.as_dtype`); `name` is the
    array's name in messages, `what()` the array and its store; `items` (`str` or
    `bytes`, for an object array of variable-length strings or bytes) what each element
    must be (`casting.as_items`), so that no chunk is written before one is refused.

    A value whose shape does not fit is refused for that first, whatever its dtype: a
    value both misshapen and of another kind is most often the wrong value. A shape
    numpy cannot address at all is `SelectionTooLargeError`."""
    engine.check_addressable(shape, dtype, what)
    value_shape = _shape_of(value, dtype)
    if value_shape is not None and not _broadcasts(value_shape, shape):
        raise ValueShapeError(
            f"cannot store a value of shape {value_shape} in {name}: it cannot be "
            f"broadcast to the selection's shape {shape}; give a value of that shape, or "
            "one that broadcasts to it (a scalar)"
        )
    try:
        if items is not None:
            return np.broadcast_to(casting.as_items(value, items), shape)
        return np.broadcast_to(casting.as_dtype(value, dtype), shape)
    except ValueOutOfRangeError as error:
        raise ValueOutOfRangeError(
            f"cannot store the value in {name} (dtype {dtype}): {error}"
        ) from None
    except (TypeError, ValueError) as error:
        raise InvalidValueError(
            f"cannot store {_described(value)} in {name} (dtype {dtype}, selection shape "
            f"{shape}): {error}"
        ) from None


def _described(value: Any) -> str:
    """ "a value of dtype D and shape S"; a ragged value has neither, and describing it
    must not raise numpy's ValueError in place of the `InvalidValueError` under way."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return "a ragged value (nested sequences of different lengths)"
    return f"a value of dtype {array.dtype} and shape {array.shape}"


def value_shape(value: Any, dtype: Any) -> tuple[int, ...]:
    """The shape of `value` in elements of `dtype` (any form numpy takes): that of
    `create_array(data=)` and of `append`'s values, where a tuple is one element of a
    structured type (`np.shape` makes its fields an axis)."""
    try:
        shape = _shape_of(value, np.dtype(dtype))
    except (TypeError, ValueError):  # not a numpy dtype ("string"): no records either
        shape = None
    return np.shape(value) if shape is None else shape


def _shape_of(value: Any, dtype: np.dtype[Any]) -> tuple[int, ...] | None:
    """The shape of `value` in elements of `dtype` (a tuple is one element of a structured
    type, as numpy reads it); None where numpy cannot tell (ragged: refused later with
    numpy's words)."""
    try:
        if dtype.names is not None and isinstance(value, tuple | list):
            return np.asarray(value, dtype=dtype).shape
        return np.shape(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _broadcasts(value_shape: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether a value of `value_shape` broadcasts to `shape` (numpy's rule, one way)."""
    if len(value_shape) > len(shape):
        return False
    tail = shape[len(shape) - len(value_shape) :]
    return all(v in (1, s) for v, s in zip(value_shape, tail, strict=True))
