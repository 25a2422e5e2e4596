"""Selections on a chunk grid -> the output shape and one projection per chunk touched.

The grid is regular (a chunk shape) or rectilinear (per axis, the length of every chunk
edge: `aiozarr.selection.chunk_grid.RectilinearGrid`, or a list of edge lengths in place of an int).
A selection is resolved axis by axis: each axis yields the chunks it touches and, for
each, what to take from the chunk (`chunk_selection`) and where it lands in the output
(`out_selection`). The chunks touched by the whole selection are the cartesian product of
the per-axis ones, so the work is O(chunks touched), vectorised with numpy along each axis;
on a rectilinear axis, `np.searchsorted` over the cumulative edge offsets finds the chunks.

Contract: for every `ChunkProjection p` and a decoded chunk of its full shape (the chunk
shape, or that chunk's edge lengths on a rectilinear grid; even at the array's edge),
`out[p.out_selection] = chunk[p.chunk_selection]` fills the selected values of a read, and
`chunk[p.chunk_selection] = value[p.out_selection]` applies a write. Both selections index
numpy arrays directly.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, TypeAlias

import numpy as np

from aiozarr.errors import BoundsCheckError, InvalidSliceError, SelectionError
from aiozarr.selection.chunk_grid import AxisEdges, RectilinearGrid

# One axis of a projection: an int (axis dropped), a slice, or an integer index array.
AxisSelection: TypeAlias = "int | slice | np.ndarray"
# A chunk grid: a chunk shape, a rectilinear grid, or per axis a chunk length or edges.
ChunkGrid: TypeAlias = "Sequence[int | Sequence[int] | AxisEdges] | RectilinearGrid"
# One axis of a grid as the resolvers take it: a chunk length, or irregular edges.
AxisGrid: TypeAlias = "int | AxisEdges"


@dataclass(frozen=True, slots=True)
class ChunkProjection:
    """What one chunk contributes to a selection.

    `is_complete_chunk` is true only when the selection takes the whole chunk, in order,
    with step 1, and the chunk lies entirely inside the array; then `out[out_selection]`
    has exactly the chunk's shape (its own shape on a rectilinear grid): a write need not
    read the old chunk first, and where `out_selection` holds no index array (a view:
    every selection this module makes) a chunk may be decoded straight into it.

    `covers_chunk_in_array`: a write replaces all the chunk holds, starting from the fill
    value without reading it. This module sets it where the chunk is complete; a chunk
    at the array's far edge is merged into (its part past the edge kept), as another
    writer may have grown the array and written there meanwhile. zarr-python's pipeline
    items it calls complete set it for such a chunk too (`aiozarr.zarr`), as zarr-python
    writes them.
    """

    chunk_coords: tuple[int, ...]
    chunk_selection: tuple[AxisSelection, ...]
    out_selection: tuple[slice | np.ndarray | EllipsisType, ...]
    is_complete_chunk: bool
    covers_chunk_in_array: bool


@dataclass(frozen=True, slots=True)
class _Axis:
    """One axis resolved: the chunks it touches (ascending) and, per chunk, its selections."""

    chunks: np.ndarray  # grid indices along this axis, ascending, int64
    chunk_sels: list[AxisSelection]
    out_sels: list[slice | np.ndarray | None]  # None where the axis is dropped (int)
    complete: list[bool]
    length: int | None  # output length along this axis; None when dropped


class Indexer:
    """A resolved selection: output `shape` and the chunk projections, in grid (C) order."""

    def __init__(self, axes: Sequence[_Axis]) -> None:
        self._axes = tuple(axes)
        self.shape: tuple[int, ...] = tuple(a.length for a in self._axes if a.length is not None)
        self.nchunks: int = math.prod(len(a.chunks) for a in self._axes)

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The shape of the values the caller gets (the engine reads into `shape`)."""
        return self.shape

    def __len__(self) -> int:
        return self.nchunks

    def __iter__(self) -> Iterator[ChunkProjection]:
        if self.nchunks == 0:
            return
        axes = self._axes
        kept = [a.length is not None for a in axes]
        if any(isinstance(s, np.ndarray) for a in axes for s in (*a.chunk_sels, *a.out_sels)):
            yield from self._outer_projections(kept)
            return
        # Slices and ints only: the selections index numpy as they are (the hot case: a
        # block of many chunks), so each projection is built from per-axis tuples.
        per_axis = [
            list(zip(a.chunks.tolist(), a.chunk_sels, a.out_sels, a.complete, strict=True))
            for a in axes
        ]
        if not axes:  # 0-d: its one chunk, whole
            yield ChunkProjection((), (), (...,), True, True)
            return
        every_axis_kept = all(kept)
        for picked in itertools.product(*per_axis):
            coords, chunk_sel, out_sel, complete = zip(*picked, strict=True)
            if not every_axis_kept:
                out_sel = tuple(o for o, keep in zip(out_sel, kept, strict=True) if keep)
            whole = all(complete)
            # `...` on a 0-d output: `out[...]` is a view, where `out[()]` is a scalar.
            yield ChunkProjection(coords, chunk_sel, out_sel or (...,), whole, whole)

    def _outer_projections(self, kept: list[bool]) -> Iterator[ChunkProjection]:
        """The projections where some axis selects with an array (`_outer` them)."""
        axes = self._axes
        lengths = [len(a.chunks) for a in axes]
        for combo in itertools.product(*(range(n) for n in lengths)):
            picked = list(zip(axes, combo, strict=True))
            chunk_sel = [a.chunk_sels[i] for a, i in picked]
            out_sel = [a.out_sels[i] for a, i in picked if a.length is not None]
            yield ChunkProjection(
                chunk_coords=tuple(int(a.chunks[i]) for a, i in picked),
                chunk_selection=_outer(chunk_sel, kept),
                out_selection=_outer(out_sel, [True] * len(out_sel)) if out_sel else (...,),
                is_complete_chunk=all(a.complete[i] for a, i in picked),
                covers_chunk_in_array=all(a.complete[i] for a, i in picked),
            )

    def chunk_coords_array(self) -> np.ndarray:
        """Grid coordinates of every chunk touched, shape (nchunks, ndim), in `__iter__` order."""
        if not self._axes:
            return np.zeros((1, 0), dtype=np.int64)
        grids = np.meshgrid(*(a.chunks for a in self._axes), indexing="ij")
        return np.stack([g.reshape(-1) for g in grids], axis=1).astype(np.int64, copy=False)

    def __repr__(self) -> str:
        return f"<Indexer shape={self.shape} nchunks={self.nchunks}>"


class _PointIndexer(Indexer):
    """One element: its chunk and its place in the chunk, known without resolving axes."""

    def __init__(self, chunk_coords: tuple[int, ...], local: tuple[int, ...]) -> None:
        self.shape = ()
        self.nchunks = 1
        self._projection = ChunkProjection(chunk_coords, local, (...,), False, False)

    def __iter__(self) -> Iterator[ChunkProjection]:
        yield self._projection

    def chunk_coords_array(self) -> np.ndarray:
        return np.array([self._projection.chunk_coords], dtype=np.int64).reshape(1, -1)

    def __repr__(self) -> str:
        return f"<Indexer point in chunk {self._projection.chunk_coords}>"


def _point(selection: Any, shape: Sequence[int], chunk_shape: ChunkGrid) -> Indexer | None:
    """The indexer of `selection` when it is one Python int per axis of a regular grid.

    Reading one element is the hot loop of point-query services; this skips the per-axis
    machinery (arrays, products, outer selections) that a general selection needs.
    """
    if (
        type(selection) is not tuple
        or not shape
        or len(selection) != len(shape)
        or isinstance(chunk_shape, RectilinearGrid)
    ):
        return None
    coords, local = [], []
    for axis, (index, size, chunk) in enumerate(zip(selection, shape, chunk_shape, strict=True)):
        if type(index) is not int or type(chunk) is not int or chunk < 1:
            return None
        if not -size <= index < size:
            raise BoundsCheckError(
                f"index {index} is out of bounds for axis {axis} with size {size}"
            )
        k, i = divmod(index % size, chunk)
        coords.append(k)
        local.append(i)
    return _PointIndexer(tuple(coords), tuple(local))


def _outer(parts: list[Any], kept: list[bool]) -> tuple[AxisSelection, ...]:
    """Make per-axis selections index numpy as an outer product.

    numpy already does so with slices and at most one advanced index (an array or an int).
    With more, ints and arrays broadcast together, so every kept axis becomes an index
    array shaped like `np.ix_` would make it; dropped (int) axes stay ints.
    """
    n_arrays = sum(isinstance(p, np.ndarray) for p in parts)
    n_ints = len(parts) - sum(kept)
    if n_arrays == 0 or n_arrays + n_ints == 1:
        return tuple(parts)
    ndim = sum(kept)
    out: list[AxisSelection] = []
    k = 0
    for part, keep in zip(parts, kept, strict=True):
        if not keep:
            out.append(part)
            continue
        if isinstance(part, slice):
            part = np.arange(part.start, -1 if part.stop is None else part.stop, part.step)
        shape = [1] * ndim
        shape[k] = -1
        out.append(part.reshape(shape))
        k += 1
    return tuple(out)


# -- selection normalisation -----------------------------------------------------------------


def is_int(key: Any) -> bool:
    """An integer index (Python or numpy, 0-d integer arrays too); bools are not integers,
    nor is `np.timedelta64` (a subclass of `np.signedinteger`, refused by numpy)."""
    if isinstance(key, bool | np.bool_ | np.timedelta64):
        return False
    if isinstance(key, int | np.integer):
        return True
    return isinstance(key, np.ndarray) and key.ndim == 0 and key.dtype.kind in "iu"


def is_array_like(key: Any) -> bool:
    """An index array or list (of integers or bools), not a single integer."""
    return isinstance(key, np.ndarray | list) and not is_int(key)


def is_basic_selection(selection: Any) -> bool:
    """True when `selection` holds only ints, slices, `...` (and `None`, refused later).

    The array layer uses the basic indexer then, and the orthogonal indexer otherwise:
    a selection with lists or arrays selects the outer product of the per-axis
    selections (zarr-python's `oindex`), never numpy's zipped "fancy" indexing.
    """
    keys = selection if isinstance(selection, tuple) else (selection,)
    return not any(is_array_like(k) for k in keys)


def normalize_selection(selection: Any, shape: Sequence[int]) -> tuple[Any, ...]:
    """`selection` as one key per axis: `...` expanded and missing trailing axes `slice(None)`.

    Raises `SelectionError` for `None`/`np.newaxis`, several `...`, too many indices, or
    keys that are neither ints, slices, arrays nor lists (floats, strings...).
    """
    keys = selection if isinstance(selection, tuple) else (selection,)
    ndim = len(shape)
    n_ellipsis = 0
    for key in keys:
        if key is Ellipsis:
            n_ellipsis += 1
        elif key is None:
            raise SelectionError("np.newaxis (None) is not supported in a selection")
        elif not (is_int(key) or isinstance(key, slice) or is_array_like(key)):
            raise SelectionError(
                f"invalid index {key!r} of type {type(key).__name__}: only integers, slices, "
                "`...`, integer arrays and boolean masks are valid indices"
            )
    if n_ellipsis > 1:
        raise SelectionError("a selection can only have a single ellipsis ('...')")
    n_indexed = len(keys) - n_ellipsis
    if n_indexed > ndim:
        raise SelectionError(
            f"too many indices for array: array is {ndim}-dimensional, but {n_indexed} were indexed"
        )
    fill = (slice(None),) * (ndim - n_indexed)
    if n_ellipsis:
        at = next(i for i, k in enumerate(keys) if k is Ellipsis)
        return (*keys[:at], *fill, *keys[at + 1 :])
    return (*keys, *fill)


# -- per-axis resolution ----------------------------------------------------------------------


def _int_axis(key: Any, axis: int, size: int, chunk: AxisGrid) -> _Axis:
    index = operator.index(key)
    if not -size <= index < size:
        raise BoundsCheckError(f"index {index} is out of bounds for axis {axis} with size {size}")
    index %= size
    if isinstance(chunk, int):
        k, local = index // chunk, index % chunk
    else:
        k = int(chunk.chunk_of(index))
        local = index - int(chunk.start_of(k))
    return _Axis(np.array([k], dtype=np.int64), [local], [None], [False], None)


def slice_indices(key: slice, axis: int, size: int) -> tuple[int, int, int]:
    """`key.indices(size)`; a step 0 or a member no integer: `InvalidSliceError`."""
    try:
        return key.indices(size)
    except (TypeError, ValueError) as error:
        raise InvalidSliceError(f"invalid slice {key!r} for axis {axis}: {error}") from error


def _slice_axis(key: slice, axis: int, size: int, chunk: AxisGrid, empty: bool) -> _Axis:
    """`key` on `axis`; no chunk where the whole selection is `empty`."""
    start, stop, step = slice_indices(key, axis, size)
    # A step as long as the axis takes one element at most, as any longer one does; clamped
    # so the int64 arithmetic below cannot overflow on a step of 2**63 or more.
    step = max(-size, min(step, size)) or 1
    n = len(range(start, stop, step))
    if n == 0 or empty:
        return _Axis(np.zeros(0, dtype=np.int64), [], [], [], n)
    if step == 1 and isinstance(chunk, int) and (stop - 1) // chunk - start // chunk < _FEW:
        return _few_chunks_axis(start, stop, chunk)
    reverse = step < 0
    if reverse:  # the same elements in ascending order; output positions flip below
        start, step = start + (n - 1) * step, -step
    last = start + (n - 1) * step
    k, origin, length = _candidate_chunks(start, last, step, n, chunk)
    # Every value below stays within [0, last] (int64 cannot hold last + step or
    # origin + length near 2**63): elements by their index j in the selection.
    lo = np.maximum(origin, start)
    j_first = -((start - lo) // step)  # the first element >= lo
    hi = np.minimum(origin, last - (length - 1)) + (length - 1)  # min(origin + length - 1, last)
    j_end = (hi - start) // step  # the last element <= hi
    touched = j_first <= j_end
    k, origin, j_first, j_end = k[touched], origin[touched], j_first[touched], j_end[touched]
    first, end = start + j_first * step, start + j_end * step
    count = j_end - j_first + 1
    pos = j_first  # output position of `first` (ascending order)
    local_first = (first - origin).tolist()
    local_end = (end - origin).tolist()
    counts = count.tolist()
    if reverse:
        out_start = (n - pos - count).tolist()
        chunk_sels: list[AxisSelection] = [
            slice(e, f - 1 if f > 0 else None, -step)
            for f, e in zip(local_first, local_end, strict=True)
        ]
        complete = [False] * len(counts)
    else:
        out_start = pos.tolist()
        chunk_sels = [slice(f, e + 1, step) for f, e in zip(local_first, local_end, strict=True)]
        if isinstance(length, int):
            complete = [step == 1 and c == length for c in counts]
        else:
            complete = ((count == length[touched]) & (step == 1)).tolist()
    out_sels: list[slice | np.ndarray | None] = [
        slice(o, o + c) for o, c in zip(out_start, counts, strict=True)
    ]
    return _Axis(k, chunk_sels, out_sels, complete, n)


def _candidate_chunks(
    start: int, last: int, step: int, n: int, chunk: AxisGrid
) -> tuple[np.ndarray, np.ndarray, Any]:
    """The chunks that may hold elements `start, start + step, ..., last` (`n` of them),
    their first elements and edge lengths: those spanned, or where fewer elements than
    that are taken (a step past a chunk), their own chunks: the cost follows the output."""
    regular = isinstance(chunk, int)
    ends = np.array([start, last], dtype=np.int64)
    lo, hi = (start // chunk, last // chunk) if regular else map(int, chunk.chunk_of(ends))
    if n < hi - lo + 1:
        elements = start + np.arange(n, dtype=np.int64) * step
        k = np.unique(elements // chunk if regular else chunk.chunk_of(elements))
    else:
        k = np.arange(lo, hi + 1, dtype=np.int64)
    if regular:
        return k, k * chunk, chunk
    return k, chunk.start_of(k), chunk.size_of(k)


#: Below this many chunks a contiguous slice is resolved in plain Python: numpy's calls
#: cost more than the arithmetic for the few chunks a typical read touches.
_FEW = 16


def _few_chunks_axis(start: int, stop: int, chunk: int) -> _Axis:
    """`_slice_axis` of `start:stop` (step 1, non-empty) over regular chunks, few of them."""
    first, last = start // chunk, (stop - 1) // chunk
    chunk_sels: list[AxisSelection] = []
    out_sels: list[slice | np.ndarray | None] = []
    complete = []
    for k in range(first, last + 1):
        origin = k * chunk
        lo, hi = max(origin, start), min(origin + chunk, stop)
        chunk_sels.append(slice(lo - origin, hi - origin, 1))
        out_sels.append(slice(lo - start, hi - start))
        complete.append(hi - lo == chunk)
    chunks = np.arange(first, last + 1, dtype=np.int64)
    return _Axis(chunks, chunk_sels, out_sels, complete, stop - start)


def _as_index_array(key: Any, axis: int, size: int) -> np.ndarray:
    """An integer array, bool mask or list -> sorted-or-not int64 indices in [0, size)."""
    array = as_index_values(key, axis, size)
    if array.ndim != 1:
        raise SelectionError(
            f"index arrays must be 1-dimensional, got {array.ndim} dimensions "
            f"(shape {array.shape}) for axis {axis}"
        )
    if array.dtype.kind == "b":
        if array.shape[0] != size:
            raise SelectionError(
                f"boolean mask of length {array.shape[0]} does not match axis {axis} of size {size}"
            )
        return np.flatnonzero(array)
    if array.size == 0:  # np.asarray([]) is float64: an empty list selects nothing
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise SelectionError(
            f"index array for axis {axis} has dtype {array.dtype}: "
            "only integer arrays and boolean masks are valid"
        )
    return checked_indices(array, axis, size)


def as_index_values(key: Any, axis: int, size: int) -> np.ndarray:
    """`key` as an array; raises `BoundsCheckError` for a list of ints too large for int64.

    numpy makes such a list float64 or object, which would be refused for its dtype; every
    one holds an index out of bounds (no axis reaches 2**63), so that index is named.
    """
    try:
        array = np.asarray(key)
    except ValueError:  # nested lists of different lengths
        raise SelectionError(f"ragged index for axis {axis}: {key!r:.100}") from None
    if isinstance(key, list) and array.dtype.kind in "fO":
        values = np.array(key, dtype=object).reshape(-1)
        if all(is_int(v) for v in values):
            first = next((v for v in values if not -size <= v < size), None)
            if first is not None:
                raise BoundsCheckError(
                    f"index {first} is out of bounds for axis {axis} with size {size}"
                )
    return array


def checked_indices(array: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Integer indices (of any integer dtype) -> int64 indices in [0, size).

    The bounds are checked in the indices' own dtype before the cast to int64: a uint64
    index >= 2**63 would otherwise wrap to a negative one and count from the end.
    """
    bad = array >= size
    if array.dtype.kind != "u":
        bad |= array < -size
    if bad.any():
        first = array.reshape(-1)[bad.reshape(-1).argmax()]
        raise BoundsCheckError(
            f"index {int(first)} is out of bounds for axis {axis} with size {size}"
        )
    index = array.astype(np.int64)
    return np.where(index < 0, index + size, index)


def _array_axis(key: Any, axis: int, size: int, chunk: AxisGrid) -> _Axis:
    index = _as_index_array(key, axis, size)
    n = len(index)
    if n == 0:
        return _Axis(np.zeros(0, dtype=np.int64), [], [], [], 0)
    chunks = index // chunk if isinstance(chunk, int) else chunk.chunk_of(index)
    order = np.argsort(chunks, kind="stable")  # keeps output positions ascending per chunk
    sorted_chunks = chunks[order]
    if isinstance(chunk, int):
        local = index[order] - sorted_chunks * chunk
    else:
        local = index[order] - chunk.start_of(sorted_chunks)
    bounds = np.flatnonzero(np.diff(sorted_chunks)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [n]))
    # A chunk's group is a run (slices, not arrays) when both the chunk positions and the
    # output positions step by 1; count the pairs that do not, cumulatively.
    breaks = (np.diff(local) != 1) | (np.diff(order) != 1)
    broken = np.concatenate(([0], np.cumsum(breaks)))
    is_run = (broken[ends - 1] - broken[starts]) == 0
    chunk_sels: list[AxisSelection] = []
    out_sels: list[slice | np.ndarray | None] = []
    complete: list[bool] = []
    lengths = (
        [chunk] * len(starts)
        if isinstance(chunk, int)
        else chunk.size_of(sorted_chunks[starts]).tolist()
    )
    for s, e, run, length in zip(
        starts.tolist(), ends.tolist(), is_run.tolist(), lengths, strict=True
    ):
        if run:
            lo, o = int(local[s]), int(order[s])
            chunk_sels.append(slice(lo, lo + e - s, 1))
            out_sels.append(slice(o, o + e - s))
            complete.append(lo == 0 and e - s == length)
        else:
            chunk_sels.append(local[s:e])
            out_sels.append(order[s:e])
            complete.append(False)
    return _Axis(sorted_chunks[starts], chunk_sels, out_sels, complete, n)


def axis_grids(shape: Sequence[int], grid: ChunkGrid) -> list[AxisGrid]:
    """Each axis of `grid` as a chunk length (regular axes) or `AxisEdges` (irregular)."""
    parts: Sequence[Any] = grid.axes if isinstance(grid, RectilinearGrid) else grid
    if len(shape) != len(parts):
        raise ValueError(f"shape {tuple(shape)} and chunk grid {grid!r} differ in dimensions")
    axes: list[AxisGrid] = []
    for size, part in zip(shape, parts, strict=True):
        if size < 0:
            raise ValueError(f"invalid grid: shape {tuple(shape)} must be >= 0 along every axis")
        if isinstance(part, int | np.integer):
            if part < 1:
                raise ValueError(f"invalid grid: chunk shape {grid!r} must be >= 1 on every axis")
            axes.append(int(part))
            continue
        edges = part if isinstance(part, AxisEdges) else AxisEdges.of(part)
        if edges.extent < size:
            raise ValueError(
                f"chunk edges {edges.runs_text()} cover {edges.extent} elements, "
                f"less than the axis length {size}"
            )
        # Equal edges (that cover the axis) index exactly like a regular axis: take the fast path.
        axes.append(edges if edges.step is None else edges.step)
    return axes


# -- public constructors ----------------------------------------------------------------------


def basic_indexer(selection: Any, shape: Sequence[int], chunk_shape: ChunkGrid) -> Indexer:
    """Resolve a numpy basic selection (ints, slices with any step, `...`) on a chunk grid.

    `chunk_shape` is a chunk shape or a rectilinear grid (see the module docstring).
    Integer-indexed axes are dropped from the output, as in numpy. Arrays and lists are
    refused here (use `orthogonal_indexer`); `None`/`np.newaxis` is refused.
    """
    point = _point(selection, shape, chunk_shape)
    if point is not None:
        return point
    return _per_axis(selection, shape, chunk_shape, _refuse_array_axis)


def _refuse_array_axis(key: Any, axis: int, size: int, chunk: AxisGrid) -> _Axis:
    raise SelectionError(
        f"a basic selection takes only integers, slices and `...`; axis {axis} got "
        f"{type(key).__name__} (use an orthogonal selection for arrays and masks)"
    )


def orthogonal_indexer(selection: Any, shape: Sequence[int], chunk_shape: ChunkGrid) -> Indexer:
    """Resolve an orthogonal selection: per axis an int, a slice, a 1-d integer array (any
    order, repeats and negative values allowed) or a 1-d boolean mask of the axis' length.

    The output is the outer product of the per-axis selections (zarr-python's `oindex`);
    integer-indexed axes are dropped.
    """
    return _per_axis(selection, shape, chunk_shape, _array_axis)


def _per_axis(
    selection: Any,
    shape: Sequence[int],
    chunk_shape: ChunkGrid,
    other: Callable[[Any, int, int, AxisGrid], _Axis],
) -> Indexer:
    """The indexer of a selection made axis by axis: ints and slices as numpy takes them,
    any other key as `other(key, axis, size, chunk)` says. An empty selection touches no
    chunk: a slice across 2**40 chunks is not resolved when another axis selects none."""
    grid = axis_grids(shape, chunk_shape)
    keys = normalize_selection(selection, shape)
    axes: list[_Axis | int] = []  # a slice: its length, resolved once none is empty
    for axis, (key, size, chunk) in enumerate(zip(keys, shape, grid, strict=True)):
        if is_int(key):
            axes.append(_int_axis(key, axis, size, chunk))
        elif isinstance(key, slice):
            axes.append(len(range(*slice_indices(key, axis, size))))
        else:
            axes.append(other(key, axis, size, chunk))
    empty = any(a == 0 if isinstance(a, int) else a.length == 0 for a in axes)
    return Indexer(
        [
            _slice_axis(keys[i], i, shape[i], grid[i], empty) if isinstance(a, int) else a
            for i, a in enumerate(axes)
        ]
    )
