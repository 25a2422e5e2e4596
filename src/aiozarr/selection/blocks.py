"""Block selections (zarr-python's `blocks`): whole chunks, or shards, by grid index (pure)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from aiozarr.errors import BoundsCheckError, SelectionError
from aiozarr.selection.chunk_grid import axis_count, axis_start
from aiozarr.selection.indexing import (
    ChunkGrid,
    axis_grids,
    is_int,
    normalize_selection,
    slice_indices,
)


def block_selection(selection: Any, shape: Sequence[int], grid: ChunkGrid) -> tuple[Any, ...]:
    """A block selection (per axis an int or a step-1 slice of blocks, zarr-python's
    `blocks`) as the basic selection of the elements it covers; `grid` is the blocks'
    chunk shape or rectilinear grid. An int keeps its axis (block `i` is a slice of
    elements). Worked out from the grid: nothing is listed per block."""
    axes = axis_grids(shape, grid)
    counts = [axis_count(a, s) for s, a in zip(shape, axes, strict=True)]
    keys = normalize_selection(selection, counts)
    out: list[slice] = []
    for axis, (key, n, size, a) in enumerate(zip(keys, counts, shape, axes, strict=True)):
        if is_int(key):
            index = operator.index(key)
            if not -n <= index < n:
                raise BoundsCheckError(
                    f"block index {index} is out of bounds for axis {axis} with {n} blocks"
                )
            first, last = index % n, index % n + 1
        elif isinstance(key, slice) and key.step in (None, 1):
            first, last, _ = slice_indices(key, axis, n)
            last = max(first, last)
        else:
            raise SelectionError(
                f"a block selection takes integers and slices with step 1; axis {axis} got {key!r}"
            )
        out.append(slice(axis_start(a, first, size), axis_start(a, last, size)))
    return tuple(out)
