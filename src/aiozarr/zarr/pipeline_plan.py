"""A batch of zarr-python chunk selections as aiozarr chunk projections (pure).

zarr-python hands a codec pipeline one item per stored object (a chunk, or a shard of a
sharded array): its key, what to take from it (`chunk_selection`, in the object's
coordinates) and where that goes in the output (`out_selection`). aiozarr's engine reads
projections over its read grid (the inner chunks of a sharded array): `projections`
splits each item by the inner chunks it touches, with aiozarr's own indexer run over the
object, and composes each piece's place in the object's selection with the item's
`out_selection`, so every inner chunk is decoded straight into zarr-python's output
(`out[p.out_selection] = chunk[p.chunk_selection]`, or, writing,
`chunk[p.chunk_selection] = value[p.out_selection]`).

zarr-python's selections come in two forms. Orthogonal ones (basic, `oindex`, `blocks`):
per axis an int, a slice or an integer array, the arrays shaped by `np.ix_` when there
are several; axes in `drop_axes` are ints made length-1 arrays. Pointwise ones (`vindex`,
masks): one 1-d integer array per axis, and a 1-d output. Anything else gives None: the
batch is left to zarr-python's own pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aiozarr.errors import AiozarrError
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.selection.indexing import ChunkProjection, orthogonal_indexer

__all__ = ["Grid", "bounding_shape", "chunk_coords", "projections"]

#: Per output axis: a step-1 slice or a 1-d integer array of positions.
_OutAxis = slice | np.ndarray


class Grid:
    """The stored objects of an array (shape `outer`) and the chunks aiozarr reads in
    each (shape `inner`: the inner chunks of a shard, or the chunk itself)."""

    def __init__(self, outer: tuple[int, ...], inner: tuple[int, ...]) -> None:
        self.outer = outer
        self.inner = inner
        self.per = tuple(o // i for o, i in zip(outer, inner, strict=True))
        self.sharded = outer != inner


def chunk_coords(meta: ArrayMetadata, key: str) -> tuple[str, tuple[int, ...]] | None:
    """`key` split into the array's prefix ("" or ending in "/") and the grid coordinates
    of its chunk, or None when it is no chunk key of `meta`'s encoding."""
    encoding = meta.chunk_key_encoding
    ndim = len(meta.shape)
    if encoding.separator == "/":
        count = ndim + 1 if encoding.name == "default" else max(ndim, 1)
    else:
        count = 1
    parts = key.split("/")
    if len(parts) < count:
        return None
    suffix = "/".join(parts[len(parts) - count :])
    fields = suffix.split(encoding.separator)
    if encoding.name == "default":
        if fields[0] != "c":
            return None
        fields = fields[1:]
    elif ndim == 0:
        fields = []
    try:
        coords = tuple(int(f) for f in fields)
    except ValueError:
        return None
    if len(coords) != ndim or any(c < 0 for c in coords) or meta.chunk_key(coords) != suffix:
        return None
    return key[: len(key) - len(suffix)], coords


def projections(
    grid: Grid,
    coords: tuple[int, ...],
    chunk_selection: Any,
    out_selection: Any,
    drop_axes: tuple[int, ...],
    out_ndim: int,
    origin: tuple[int, ...] | None = None,
) -> list[ChunkProjection] | None:
    """The projections, over the read grid, of one zarr-python item: the object at
    `coords` (outer grid), what it gives and where it goes in an output of `out_ndim`
    dimensions; None where the selection is of a form this does not know. `origin`:
    the read-grid coordinates of the object's first inner chunk, where the objects
    differ in shape (a rectilinear grid); else they follow from `coords`."""
    if origin is None:
        origin = tuple(c * p for c, p in zip(coords, grid.per, strict=True))
    ndim = len(grid.outer)
    if not isinstance(chunk_selection, tuple) or len(chunk_selection) != ndim:
        return None
    if ndim == 0:  # a 0-d array: its one chunk, whole
        return [ChunkProjection(coords, (), (...,), True, True)] if out_ndim == 0 else None
    if _is_pointwise(chunk_selection, ndim, out_ndim):
        return _pointwise(grid, origin, chunk_selection, out_selection)
    axes = _chunk_axes(chunk_selection, drop_axes)
    if axes is None:
        return None
    out = _out_axes(out_selection, out_ndim)
    if out is None or len(out) != sum(not _is_int(a) for a in axes):
        return None
    if not grid.sharded and _is_basic(axes) and all(isinstance(o, slice) for o in out):
        # the object is one chunk read: at `origin` (a rectilinear grid's shard of one
        # inner chunk is not at its outer coordinates)
        return [_whole_object(origin, axes, out, grid.outer)]
    try:
        inner = orthogonal_indexer(tuple(axes), grid.outer, grid.inner)
    except (AiozarrError, IndexError, ValueError, TypeError):
        return None
    found = []
    for p in inner:
        found.append(
            ChunkProjection(
                tuple(o + c for o, c in zip(origin, p.chunk_coords, strict=True)),
                p.chunk_selection,
                _compose(out, p.out_selection),
                p.is_complete_chunk,
                p.covers_chunk_in_array,
            )
        )
    return found


def _whole_object(
    coords: tuple[int, ...], axes: list[Any], out: list[_OutAxis], shape: tuple[int, ...]
) -> ChunkProjection:
    """The projection of a basic selection of a chunk read (or written) as itself.

    An int on an axis the chunk is one element long on takes all of it: that axis is
    kept as a slice of the chunk and a new axis of the output (`None`), so a selection
    covering the chunk is complete (decoded into the output, written without reading).
    """
    chunk_sel: list[Any] = []
    out_sel: list[Any] = []
    rest = iter(out)
    complete = True
    for axis, n in zip(axes, shape, strict=True):
        if _is_int(axis) and n == 1:
            chunk_sel.append(slice(0, 1))
            out_sel.append(None)
            continue
        chunk_sel.append(axis)
        if isinstance(axis, slice):
            out_sel.append(next(rest))
            complete = complete and axis.indices(n) == (0, n, 1)
        else:
            complete = False
    if not complete:  # as zarr-python gave them
        return ChunkProjection(coords, tuple(axes), tuple(out) or (...,), False, False)
    return ChunkProjection(coords, tuple(chunk_sel), tuple(out_sel), True, True)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_basic(axes: Sequence[Any]) -> bool:
    return all(_is_int(a) or (isinstance(a, slice) and a.step in (None, 1)) for a in axes)


def _is_pointwise(selection: tuple[Any, ...], ndim: int, out_ndim: int) -> bool:
    """One 1-d integer array per axis, all of one length, into a 1-d output (with one
    axis, pointwise and orthogonal selections are the same)."""
    if ndim < 2 or out_ndim != 1:
        return False
    if not all(
        isinstance(s, np.ndarray) and s.ndim == 1 and s.dtype.kind in "iu" for s in selection
    ):
        return False
    return len({s.shape[0] for s in selection}) == 1


def _chunk_axes(selection: tuple[Any, ...], drop_axes: tuple[int, ...]) -> list[Any] | None:
    """Per axis an int, a slice (positive step) or a 1-d integer array; None if not."""
    axes: list[Any] = []
    for axis, part in enumerate(selection):
        if _is_int(part):
            axes.append(int(part))
        elif isinstance(part, slice):
            if part.step is not None and part.step < 1:
                return None
            axes.append(part)
        elif isinstance(part, np.ndarray) and part.dtype.kind in "iub":
            flat = np.flatnonzero(part) if part.dtype.kind == "b" else part.reshape(-1)
            if axis in drop_axes:
                if flat.shape != (1,):
                    return None
                axes.append(int(flat[0]))
            else:
                axes.append(flat.astype(np.intp, copy=False))
        else:
            return None
    return axes


def _out_axes(selection: Any, out_ndim: int) -> list[_OutAxis] | None:
    """zarr-python's `out_selection` as, per output axis, a step-1 slice or a 1-d array."""
    parts = selection if isinstance(selection, tuple) else (selection,)
    if len(parts) != out_ndim:
        return None
    out: list[_OutAxis] = []
    for part in parts:
        if isinstance(part, slice):
            if not (_is_int(part.start) and _is_int(part.stop) and part.step in (None, 1)):
                return None
            out.append(slice(int(part.start), int(part.stop)))
        elif isinstance(part, np.ndarray) and part.dtype.kind in "iu":
            out.append(part.reshape(-1).astype(np.intp, copy=False))
        else:
            return None
    return out


def _compose(outer: list[_OutAxis], inner: tuple[Any, ...]) -> tuple[Any, ...]:
    """The place in the output of a piece at `inner` (aiozarr's out selection, over the
    item's selection) of an item at `outer`, as numpy indexes an outer product."""
    if not outer:
        return (...,)
    parts: list[_OutAxis] = []
    for o, i in zip(outer, inner, strict=True):
        if isinstance(i, np.ndarray):
            i = i.reshape(-1)
        if isinstance(o, slice):
            if isinstance(i, slice):
                start, stop, step = i.indices(o.stop - o.start)
                parts.append(slice(o.start + start, o.start + stop, step))
            else:
                parts.append(i + o.start)
        else:
            parts.append(_as_slice(o[i]))
    arrays = sum(isinstance(p, np.ndarray) for p in parts)
    if arrays < 2:
        return tuple(parts)
    n = len(parts)
    shaped = []
    for k, p in enumerate(parts):
        values = _positions(p) if isinstance(p, slice) else p
        shape = [1] * n
        shape[k] = -1
        shaped.append(values.reshape(shape))
    return tuple(shaped)


def _as_slice(positions: np.ndarray) -> _OutAxis:
    """Output positions that step evenly (zarr-python's sorted, descending or permuted
    placements of a run of a chunk) as a slice, so that `out[...]` of them is a view;
    other positions as they are."""
    if positions.size == 0:
        return positions
    first = int(positions[0])
    if positions.size == 1:
        return slice(first, first + 1)
    steps = np.diff(positions)
    step = int(steps[0])
    if step == 0 or not (steps == step).all():
        return positions
    last = int(positions[-1])
    stop = last + (1 if step > 0 else -1)
    return slice(first, stop if stop >= 0 else None, step)


def _positions(part: slice) -> np.ndarray:
    """The output positions a slice of `_compose` stands for."""
    stop = -1 if part.stop is None else part.stop  # a descending slice down to 0
    return np.arange(part.start, stop, part.step)


def _pointwise(
    grid: Grid,
    origin: tuple[int, ...],
    selection: tuple[np.ndarray, ...],
    out_selection: Any,
) -> list[ChunkProjection] | None:
    """Points of one object grouped by the inner chunk holding them."""
    if isinstance(out_selection, slice):
        out = _out_axes(out_selection, 1)
        if out is None:
            return None
        positions = np.arange(out[0].start, out[0].stop)
    elif isinstance(out_selection, np.ndarray) and out_selection.ndim == 1:
        positions = out_selection.astype(np.intp, copy=False)
    else:
        return None
    points = tuple(s.astype(np.intp, copy=False) for s in selection)
    if any(len(p) != len(positions) for p in points):
        return None
    if not grid.sharded:
        return [ChunkProjection(origin, points, (positions,), False, False)]
    inner = tuple(p // n for p, n in zip(points, grid.inner, strict=True))
    linear = np.ravel_multi_index(inner, grid.per)
    order = np.argsort(linear, kind="stable")
    linear = linear[order]
    bounds = np.flatnonzero(np.diff(linear)) + 1
    found = []
    for group in np.split(order, bounds):
        cell = tuple(int(i[group[0]]) for i in inner)
        local = tuple(p[group] - c * n for p, c, n in zip(points, cell, grid.inner, strict=True))
        found.append(
            ChunkProjection(
                tuple(o + c for o, c in zip(origin, cell, strict=True)),
                local,
                (positions[group],),
                False,
                False,
            )
        )
    return found


def bounding_shape(items: Sequence[tuple[Any, ...]]) -> tuple[int, ...] | None:
    """The smallest shape every `out_selection` of `items` fits in (to broadcast a scalar
    written to them), or None for selections of unknown form."""
    shape: list[int] | None = None
    for selection in items:
        parts = selection if isinstance(selection, tuple) else (selection,)
        ends = []
        for part in parts:
            if isinstance(part, slice) and _is_int(part.stop):
                ends.append(int(part.stop))
            elif isinstance(part, np.ndarray) and part.dtype.kind in "iu":
                ends.append(int(part.max()) + 1 if part.size else 0)
            else:
                return None
        if shape is None:
            shape = ends
        elif len(ends) != len(shape):
            return None
        else:
            shape = [max(a, b) for a, b in zip(shape, ends, strict=True)]
    return None if shape is None else tuple(shape)
