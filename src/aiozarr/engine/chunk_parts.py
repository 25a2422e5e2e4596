"""Part of an uncompressed chunk, read alone: the span of bytes its selected values lie in.

A chunk stored as just its values in C order (`CodecChain.stored_values_dtype`: the
`bytes` codec alone, or a v2 chunk with no compressor and no filter) need not be read
whole for a few of its values. The values a projection selects lie in the box between
their lowest and highest index on each axis, and that box lies in the bytes from its
first corner's offset to its last's: that span is read instead, when it is at most half
the chunk. One element of a 100 MB chunk of an uncompressed NetCDF variable (a kerchunk
or icechunk reference to it) is a read of its few bytes, not of the chunk. A store that
checks a value read whole against a checksum (a zip archive's CRC-32) reads it whole.

A whole read checks the chunk's stored size, and a span is read only where that size
is checked too: one that comes back shorter than asked is an error naming the key, and
so is a chunk stored as an object of another size than its values, told by the answer's
version (`stored_size`: a file's, a memory value's, an object's size; a reference's
length, JSON, Parquet or icechunk, not its target's). A store whose answers tell no
size (`Capabilities.sized_versions` off: zarr-python's stores) reads such a chunk whole,
so its size is checked as ever; a span whose answer tells no size all the same is never
decoded: the read starts over with the array's chunks read whole (`UnsizedSpanError`).
A shard's size is checked with its index, and where the store tells none the inner
chunk is read whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from aiozarr.codecs import CodecChain
from aiozarr.errors import CodecError
from aiozarr.selection.indexing import AxisSelection, ChunkProjection
from aiozarr.storage.protocol import Buffer


@dataclass(frozen=True, slots=True)
class ChunkPart:
    """The values a projection takes from a span of a chunk: the span (`nbytes` bytes of
    `dtype` values) seen as the box it holds (`box`, with the chunk's byte `strides`),
    indexed by `selection`."""

    dtype: np.dtype[Any]
    box: tuple[int, ...]
    strides: tuple[int, ...]
    selection: tuple[AxisSelection, ...]
    nbytes: int
    chunk_shape: tuple[int, ...]

    def check_stored(self, key: str, size: int) -> None:
        """Refuse a chunk stored as an object of `size` bytes that its values do not
        fill exactly."""
        values = math.prod(self.chunk_shape) * self.dtype.itemsize
        if size != values:
            raise CodecError(
                f"chunk {key!r} is stored as {size} bytes; its shape {self.chunk_shape} of "
                f"{self.dtype} uncompressed makes {values}"
            )

    def values(self, data: Buffer, key: str) -> np.ndarray:
        """The selected values in `data`, the span as read from object `key`."""
        view = memoryview(data).cast("B")
        if view.nbytes != self.nbytes:
            raise CodecError(
                f"chunk {key!r}: {view.nbytes} bytes where a span of {self.nbytes} bytes of "
                "its values was asked for: it is stored shorter than its shape and data "
                "type make it"
            )
        first = np.frombuffer(view, dtype=self.dtype)
        # Every element of the box lies inside the span: its last is the span's last.
        box = np.lib.stride_tricks.as_strided(
            first, shape=self.box, strides=self.strides, writeable=False
        )
        return box[self.selection]


def part_of(chain: CodecChain, projection: ChunkProjection) -> tuple[ChunkPart, int] | None:
    """The part of a chunk of `chain` that `projection` takes and its byte offset in the
    chunk; None where the chunk is to be read whole (compressed, taken whole, or a span
    of more than half of it)."""
    dtype = chain.stored_values_dtype()
    shape = chain.spec.shape
    selection = projection.chunk_selection
    if dtype is None or projection.is_complete_chunk or len(selection) != len(shape):
        return None
    bounds = [_bounds(s, n) for s, n in zip(selection, shape, strict=True)]
    if not bounds or any(b is None for b in bounds):
        return None
    lows = [b[0] for b in bounds if b is not None]
    highs = [b[1] for b in bounds if b is not None]
    steps = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    first = sum(lo * step for lo, step in zip(lows, steps, strict=True))
    last = sum(hi * step for hi, step in zip(highs, steps, strict=True))
    nbytes = (last - first + 1) * dtype.itemsize
    if 2 * nbytes > chain.spec.nbytes:
        return None
    part = ChunkPart(
        dtype,
        tuple(hi - lo + 1 for lo, hi in zip(lows, highs, strict=True)),
        tuple(step * dtype.itemsize for step in steps),
        tuple(_shifted(s, n, lo) for s, n, lo in zip(selection, shape, lows, strict=True)),
        nbytes,
        shape,
    )
    return part, first * dtype.itemsize


def _bounds(selection: AxisSelection, n: int) -> tuple[int, int] | None:
    """The lowest and highest index `selection` takes on an axis of `n` (None: none)."""
    if isinstance(selection, slice):
        taken = range(*selection.indices(n))
        return (min(taken[0], taken[-1]), max(taken[0], taken[-1])) if taken else None
    if isinstance(selection, np.ndarray):
        if selection.size == 0 or selection.dtype.kind not in "iu":
            return None
        lo, hi = int(selection.min()), int(selection.max())
        return (lo, hi) if lo >= 0 and hi < n else None
    index = int(selection)
    return (index, index) if 0 <= index < n else None


def _shifted(selection: AxisSelection, n: int, low: int) -> AxisSelection:
    """`selection` (on an axis of `n`) on the axis that starts `low` further on."""
    if isinstance(selection, slice):
        taken = range(*selection.indices(n))
        stop = taken.stop - low  # below 0 only for a step down to the axis' start
        return slice(taken.start - low, stop if stop >= 0 else None, taken.step)
    return selection - low
