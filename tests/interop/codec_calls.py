"""One codec's encode or decode of a chunk, on zarr-python's codec and on aiozarr's, each
answer the values or the error that refused them: what the interop tests of single
codecs (`scale_offset`, `cast_value`) compare, by property."""

from __future__ import annotations

from typing import Any

import numpy as np
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.dtype import parse_dtype

from aiozarr.codecs import ChunkSpec
from aiozarr.errors import CodecError


def zarr_call(codec: Any, method: str, values: np.ndarray, dtype: Any = None) -> Any:
    """`codec.<method>` (zarr-python's `_encode_sync` / `_decode_sync`) of `values`, for
    a chunk of `dtype` (`values`' own by default): its values, or the error it raised."""
    spec = ArraySpec(
        shape=values.shape,
        dtype=parse_dtype(np.dtype(values.dtype if dtype is None else dtype), zarr_format=3),
        fill_value=0,
        config=ArrayConfig.from_dict({}),
        prototype=default_buffer_prototype(),
    )
    buffer = default_buffer_prototype().nd_buffer.from_ndarray_like(values.copy())
    try:
        with np.errstate(all="ignore"):  # zarr-python's float overflows warn
            return np.asarray(getattr(codec, method)(buffer, spec).as_ndarray_like())
    except (ValueError, TypeError, OverflowError) as error:
        return error


def aiozarr_call(codec: Any, method: str, values: np.ndarray, dtype: Any = None) -> Any:
    """aiozarr's `codec.<method>` of `values` for a chunk of `dtype` (`values`' own by
    default): its values, or the `CodecError` it raised."""
    spec = ChunkSpec(values.shape, np.dtype(values.dtype if dtype is None else dtype), 0)
    try:
        return getattr(codec, method)(values.copy(), spec)
    except CodecError as error:
        return error
