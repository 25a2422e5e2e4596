"""An array's selections, planned before any I/O (pure).

Which indexer each kind of selection takes (`indexer_for`, `vindexer_for`,
`block_basic`); `plan` builds it, refusing a selection whose output numpy cannot
address, or whose plan memory cannot hold, with `SelectionTooLargeError` naming the
array; `result` gives the values read in the shape the caller asked for. A
`SelectionError` from any of them gets a note naming the selection and the array
(`named`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from aiozarr.engine import entry as engine
from aiozarr.errors import AiozarrError, SelectionError
from aiozarr.selection.blocks import block_selection
from aiozarr.selection.chunk_grid import RectilinearGrid
from aiozarr.selection.indexing import (
    Indexer,
    basic_indexer,
    normalize_selection,
    orthogonal_indexer,
)
from aiozarr.selection.vectorized import coordinate_indexer, kind_of, mask_indexer, vindex_kind

#: `build(selection, shape, grid)`: an indexer of `aiozarr.selection`.
Build = Callable[..., Indexer]
#: The grid a read is planned over: chunk shape, or the rectilinear grid's edges.
Grid = tuple[int, ...] | RectilinearGrid


@contextlib.contextmanager
def named(selection: Any, what: Callable[[], str]) -> Iterator[None]:
    """A `SelectionError` raised inside gets a note naming `selection` and `what()` (the
    array); its message, which says what is wrong, stays as it is."""
    try:
        yield
    except SelectionError as error:
        error.add_note(f"selecting {selection!r:.100} in {what()}")
        raise


def indexer_for(selection: Any, ndim: int, what: Callable[[], str]) -> Build:
    """The indexer of `selection` as numpy and zarr-python read it: ints and slices select
    a block, integer arrays on every axis select points, a boolean array of the array's
    shape selects its true elements, one array among ints and slices selects
    orthogonally."""
    with named(selection, what):
        kind = kind_of(selection, ndim)
    if kind == "basic":
        return basic_indexer
    if kind == "coordinate":
        return coordinate_indexer
    if kind == "mask":
        return mask_indexer
    return orthogonal_indexer


def vindexer_for(selection: Any, ndim: int, what: Callable[[], str]) -> Build:
    """The indexer of `arr.vindex[selection]`: a mask or a coordinate selection."""
    with named(selection, what):
        return mask_indexer if vindex_kind(selection, ndim) == "mask" else coordinate_indexer


def block_basic(selection: Any, shape: tuple[int, ...], grid: Any, what: Callable[[], str]) -> Any:
    """`arr.blocks[selection]` as the basic selection of the elements it covers."""
    with named(selection, what):
        return block_selection(selection, shape, grid)


def plan(
    build: Build,
    selection: Any,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    grid: Grid,
    what: Callable[[], str],
) -> Indexer:
    """`build(selection, shape, grid)`: the chunks `selection` touches. Planning a
    selection of more chunks than memory (or numpy) holds is `SelectionTooLargeError`
    (naming `what()`) saying how big it is, not numpy's error for the planner's index
    arrays (`MemoryError`, or `ValueError` past 2**63 bytes); so is, before any
    planning, a block numpy cannot address (basic and orthogonal selections, whose
    shape is cheap to know). A `SelectionError` (out of bounds, an invalid index) gets
    a note naming the selection and `what()`."""
    if build is basic_indexer or build is orthogonal_indexer:
        try:
            out_shape = _selection_shape(normalize_selection(selection, shape), shape)
        except (TypeError, ValueError, IndexError):  # the planner says what is wrong
            pass
        else:
            engine.check_addressable(out_shape, dtype, what)
    try:
        with named(selection, what):
            return build(selection, shape, grid)
    except (MemoryError, ValueError) as error:  # numpy: "array is too big" is a ValueError
        if isinstance(error, AiozarrError):
            raise
        if build is coordinate_indexer:  # points: the index arrays' broadcast shape
            keys = selection if isinstance(selection, tuple) else (selection,)
            out_shape = np.broadcast_shapes(*(np.shape(k) for k in keys))
        else:
            out_shape = _selection_shape(normalize_selection(selection, shape), shape)
        engine.check_output_size(out_shape, dtype, what)
        raise


def result(out: np.ndarray, indexer: Indexer) -> Any:
    """The values read, in the shape the caller asked for (a scalar for one element)."""
    if indexer.result_shape != indexer.shape:
        out = out.reshape(indexer.result_shape)
    return out[()] if out.ndim == 0 else out


def _selection_shape(keys: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape of normalized selection `keys`, computed without planning it."""
    out = []
    for key, size in zip(keys, shape, strict=True):
        if isinstance(key, slice):
            out.append(len(range(*key.indices(size))))
        elif not isinstance(key, int | np.integer):
            index = np.asarray(key)
            out.append(int(np.count_nonzero(index)) if index.dtype == bool else index.size)
    return tuple(out)
