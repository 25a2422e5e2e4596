"""Vectorized selections -> chunk projections (pure): points, masks, and what `arr[sel]` means.

A coordinate selection is numpy's zipped "fancy" indexing: one integer array per axis,
broadcast together, picks the points `(i[k], j[k], ...)`; a mask selection is a boolean
array of the array's shape and picks its true elements in C order. Both read into a flat
output of one element per point (reshaped to the broadcast shape afterwards): each chunk
touched gets one projection whose `chunk_selection` holds the points' local coordinates
(one index array per axis) and whose `out_selection` holds their output positions, so the
engine reads every chunk of the selection in one batch, as for any other selection.

`kind_of` decides what `arr[sel]` means, as zarr-python 3 does: integer arrays on every
axis are vectorized, a mask of the array's shape is a mask selection, one array among
ints and slices (or arrays and masks on every axis) is orthogonal, anything else that
numpy would broadcast is refused with a pointer to `.oindex` / `.vindex`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np

from aiozarr.errors import SelectionError
from aiozarr.selection.indexing import (
    ChunkGrid,
    ChunkProjection,
    Indexer,
    as_index_values,
    axis_grids,
    checked_indices,
    is_array_like,
    is_basic_selection,
    is_int,
)

SelectionKind = Literal["basic", "orthogonal", "coordinate", "mask"]


class PointsIndexer(Indexer):
    """The points of a coordinate or mask selection, grouped by the chunk holding them.

    `shape` is the flat output (one element per point) the engine reads into;
    `result_shape` is the shape the caller gets back.
    """

    def __init__(
        self, projections: list[ChunkProjection], npoints: int, result_shape: tuple[int, ...]
    ) -> None:
        self._projections = projections
        self.shape = (npoints,)
        self._result_shape = result_shape
        self.nchunks = len(projections)

    @property
    def result_shape(self) -> tuple[int, ...]:
        return self._result_shape

    def __iter__(self) -> Iterator[ChunkProjection]:
        return iter(self._projections)

    def chunk_coords_array(self) -> np.ndarray:
        coords = [p.chunk_coords for p in self._projections]
        ndim = len(coords[0]) if coords else 0
        return np.array(coords, dtype=np.int64).reshape(len(coords), ndim)

    def __repr__(self) -> str:
        return f"<Indexer {self.shape[0]} points in {self.nchunks} chunks>"


def coordinate_indexer(
    selection: Any, shape: Sequence[int], chunk_shape: ChunkGrid
) -> PointsIndexer:
    """Resolve a coordinate selection: per axis an int or an integer array (negative values
    count from the end), broadcast together; the result has the broadcast shape."""
    keys = selection if isinstance(selection, tuple) else (selection,)
    if len(keys) != len(shape) or not all(is_int(k) or _is_int_array(k) for k in keys):
        raise SelectionError(
            "a coordinate selection takes one integer or integer array per axis "
            f"({len(shape)} for this array), got {_describe(keys)}"
        )
    # Bounds are checked before broadcasting, as numpy does: an index out of bounds is
    # refused even where another axis' empty array leaves no point to read.
    arrays = [
        checked_indices(as_index_values(k, axis, size), axis, size)
        if not _is_empty_list(k)
        else np.zeros(0, np.int64)
        for axis, (k, size) in enumerate(zip(keys, shape, strict=True))
    ]
    try:
        broadcast = np.broadcast_arrays(*arrays)
    except ValueError as error:
        raise SelectionError(f"coordinate arrays cannot be broadcast together: {error}") from None
    result_shape = broadcast[0].shape if broadcast else ()
    flat = [index.reshape(-1) for index in broadcast]
    return _points(flat, shape, chunk_shape, result_shape)


def mask_indexer(mask: Any, shape: Sequence[int], chunk_shape: ChunkGrid) -> PointsIndexer:
    """Resolve a mask selection: a boolean array of the array's shape; the result is 1-d,
    its true elements in C order."""
    if isinstance(mask, tuple) and len(mask) == 1:
        mask = mask[0]
    try:
        array = np.asarray(mask)
    except ValueError:  # nested lists of different lengths
        raise SelectionError(f"a mask selection got a ragged list: {mask!r:.100}") from None
    if array.dtype.kind != "b" or array.shape != tuple(shape):
        raise SelectionError(
            f"a mask selection takes one boolean array of the array's shape {tuple(shape)}, "
            f"got {_describe((mask,))}"
        )
    if array.ndim == 0:  # a 0-d array: its one element, or nothing
        return _points([], shape, chunk_shape, (1,)) if array else PointsIndexer([], 0, (0,))
    flat = [axis.astype(np.int64, copy=False) for axis in np.nonzero(array)]
    return _points(flat, shape, chunk_shape, (len(flat[0]),))


def _points(
    flat: list[np.ndarray],
    shape: Sequence[int],
    chunk_shape: ChunkGrid,
    result_shape: tuple[int, ...],
) -> PointsIndexer:
    """Group in-bounds points (one flat index array per axis) by the chunk holding them."""
    grid = axis_grids(shape, chunk_shape)
    npoints = len(flat[0]) if flat else 1
    if not flat:  # a 0-d array: its one element
        # Output position 0, not `slice(None)`: a write's part must be a scalar, the shape
        # of the 0-d chunk's `chunk[()]`, not the 1-element flat output.
        return PointsIndexer([ChunkProjection((), (), (0,), False, True)], 1, result_shape)
    if npoints == 0:
        return PointsIndexer([], 0, result_shape)
    chunk_ids, local = [], []
    for index, chunk in zip(flat, grid, strict=True):
        if isinstance(chunk, int):
            k = index // chunk
            local.append(index - k * chunk)
        else:
            k = chunk.chunk_of(index)
            local.append(index - chunk.start_of(k))
        chunk_ids.append(k)
    # Sort points by chunk (C order of chunk coordinates), keeping output order within one.
    order = np.lexsort(chunk_ids[::-1])
    ids = np.stack([k[order] for k in chunk_ids], axis=1)
    starts = np.flatnonzero(np.concatenate(([True], (ids[1:] != ids[:-1]).any(axis=1))))
    ends = np.concatenate((starts[1:], [npoints]))
    local_sorted = [loc[order] for loc in local]
    projections = [
        ChunkProjection(
            chunk_coords=tuple(int(c) for c in ids[s]),
            chunk_selection=tuple(loc[s:e] for loc in local_sorted),
            out_selection=(order[s:e],),
            is_complete_chunk=False,
            covers_chunk_in_array=False,
        )
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
    return PointsIndexer(projections, npoints, result_shape)


# -- what a selection means -------------------------------------------------------------------


def _is_empty_list(key: Any) -> bool:
    return isinstance(key, list) and len(key) == 0


def _is_int_array(key: Any) -> bool:
    """An integer array or (nested) list of integers; an empty list counts."""
    if _is_empty_list(key):
        return True
    if isinstance(key, np.ndarray):
        return key.dtype.kind in "iu"
    return isinstance(key, list) and _list_kind(key) in "iu"


def _is_mask(key: Any) -> bool:
    if isinstance(key, np.ndarray):
        return key.dtype.kind == "b"
    return isinstance(key, list) and len(key) > 0 and _list_kind(key) == "b"


def _list_kind(key: Any) -> str:
    """numpy's dtype kind of a (nested) list; "O" when it is ragged. A list of ints too
    large for int64 (float64 or object to numpy) is "i": its bounds check names them."""
    try:
        kind = np.asarray(key).dtype.kind
        if kind in "fO" and all(is_int(v) for v in np.array(key, dtype=object).reshape(-1)):
            return "i"
    except ValueError:
        return "O"
    return kind


def _describe(keys: tuple[Any, ...]) -> str:
    parts = []
    for key in keys:
        if isinstance(key, np.ndarray | list) and _list_kind(key) != "O":
            array = np.asarray(key)
            parts.append(f"{type(key).__name__} of {array.dtype} shape {array.shape}")
        else:
            parts.append(repr(key))
    return "(" + ", ".join(parts) + ")"


def kind_of(selection: Any, ndim: int) -> SelectionKind:
    """What `arr[selection]` means on an array of `ndim` axes (zarr-python 3's rules).

    Raises `SelectionError` for selections numpy would broadcast in ways neither an
    orthogonal nor a coordinate selection expresses (several arrays among slices).
    """
    if is_basic_selection(selection):
        return "basic"
    keys = selection if isinstance(selection, tuple) else (selection,)
    if len(keys) == 1 and _is_mask(keys[0]) and np.ndim(keys[0]) == ndim:
        return "mask"
    if len(keys) == ndim and all(is_int(k) or _is_int_array(k) for k in keys):
        return "coordinate"
    arrays = [k for k in keys if is_array_like(k)]
    if len(arrays) <= 1 or sum(k is not Ellipsis for k in keys) > ndim:
        return "orthogonal"
    # Masks among the arrays: per-axis selections, as zarr-python (ragged: refused there).
    if len(keys) == len(arrays) == ndim and all(
        _list_kind(k) == "O" or np.ndim(k) == 1 for k in keys
    ):
        return "orthogonal"
    raise SelectionError(
        f"ambiguous selection {_describe(keys)} on a {ndim}-d array: several index arrays "
        "among slices or missing axes; use arr.oindex[...] for the outer product of per-axis "
        "selections or arr.vindex[...] for points (one integer array per axis)"
    )


def vindex_kind(selection: Any, ndim: int) -> Literal["coordinate", "mask"]:
    """What `arr.vindex[selection]` means: one boolean array is a mask selection, one int
    or integer array per axis a coordinate selection; anything else is refused."""
    keys = selection if isinstance(selection, tuple) else (selection,)
    if len(keys) == 1 and _is_mask(keys[0]):
        return "mask"
    if len(keys) == ndim and all(is_int(k) or _is_int_array(k) for k in keys):
        return "coordinate"
    raise SelectionError(
        f"vindex takes one integer (array) per axis ({ndim} for this array) or one boolean "
        f"mask of the array's shape, got {_describe(keys)}"
    )
