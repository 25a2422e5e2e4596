"""An array's shape and grid, and how they change (pure): the rule a rectilinear grid
keeps (checked when the array is built), the metadata after a resize with the stored
objects it leaves outside and the cut-off parts of those it keeps, and the shape and
region of an append."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from aiozarr.errors import AxisError, MetadataError, UnsupportedError, ValueShapeError
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.sizes import MAX_EXTENT, ceil_div


def check_rectilinear(meta: ArrayMetadata, key: str) -> None:
    """A rectilinear grid is v3 only; sharded, every shard edge must hold whole inner
    chunks (`key`: the metadata document, in messages)."""
    grid = meta.chunk_grid
    assert grid is not None
    if meta.zarr_format != 3:
        raise MetadataError(f"{key}: only Zarr v3 arrays can have a rectilinear chunk grid")
    codecs = [c for c in meta.codecs if c.name == "sharding_indexed"]
    inner = codecs[0].configuration.get("chunk_shape") if codecs else None
    if not isinstance(inner, list) or len(inner) != grid.ndim:
        return  # unsharded, or a malformed configuration the codec itself reports
    for axis, c in enumerate(inner):
        bad = [e for e in grid.distinct_edges(axis) if not isinstance(c, int) or c < 1 or e % c]
        if bad:
            raise UnsupportedError(
                f"{key}: sharding_indexed inner chunk shape {inner} must divide every shard "
                f"edge of the rectilinear chunk grid, but axis {axis} has an edge of {bad[0]}"
            )


def checked_shape(value: Any, name: str, ndim: int | None = None) -> tuple[int, ...]:
    """`value` (an int or a sequence of them) as a shape; `MetadataError` naming `name`
    for anything else (floats, strings and bools are no sizes) or a wrong `ndim`."""
    shape = (value,) if isinstance(value, int | np.integer) else tuple(value)
    if not all(_is_size(s) for s in shape):
        raise MetadataError(f"{name} must be non-negative integers, got {value!r}")
    if ndim is not None and len(shape) != ndim:
        raise MetadataError(f"{name} {shape} has {len(shape)} dimensions, the array has {ndim}")
    if any(s > MAX_EXTENT for s in shape):  # the metadata readers refuse it: never write it
        raise MetadataError(
            f"{name} {tuple(int(s) for s in shape)} is too large: every extent must be "
            f"below 2**63 (at most {MAX_EXTENT}), or the array could not be opened again"
        )
    return tuple(int(s) for s in shape)


def _is_size(value: Any) -> bool:
    return (
        isinstance(value, int | np.integer)
        and not isinstance(value, bool | np.bool_)
        and value >= 0
    )


def resized(
    old: ArrayMetadata, new_shape: int | Sequence[int], name: str
) -> tuple[ArrayMetadata, list[tuple[int, ...]]]:
    """The metadata of array `name` resized to `new_shape`, and the grid coordinates of
    its stored objects (shards, else chunks) wholly outside the new shape.

    On a rectilinear grid the edges stay as they are when shrinking (edges past the end
    are allowed); growing past the last edge repeats the last edge of that axis as often
    as needed."""
    try:
        shape = checked_shape(new_shape, "the new shape", len(old.shape))
    except MetadataError as error:
        raise MetadataError(f"cannot resize {name} from {old.shape}: {error}") from None
    new = dataclasses.replace(old, shape=shape)
    if old.chunk_grid is None:
        grid = old.chunk_shape
        old_counts = [ceil_div(s, c) for s, c in zip(old.shape, grid, strict=True)]
        new_counts = [ceil_div(s, c) for s, c in zip(shape, grid, strict=True)]
    else:
        try:
            grown = old.chunk_grid.grown(shape)
        except MetadataError as error:
            raise MetadataError(f"cannot resize {name} to {shape}: {error}") from None
        new = dataclasses.replace(new, chunk_grid=grown, chunk_shape=grown.max_shape)
        old_counts = list(old.chunk_grid.counts_within(old.shape))
        new_counts = list(grown.counts_within(shape))
    return new, outside_objects(old_counts, new_counts)


def outside_objects(old_counts: Sequence[int], new_counts: Sequence[int]) -> list[tuple[int, ...]]:
    """The grid coordinates (in C order) of a grid of `old_counts` objects outside one of
    `new_counts`: per shrunk axis, the slab it cuts off (earlier axes within their kept
    range, so no object is counted twice), never every object of the grid."""
    outside: list[tuple[int, ...]] = []
    for axis, (old_n, new_n) in enumerate(zip(old_counts, new_counts, strict=True)):
        if new_n >= old_n:
            continue
        ranges = [
            range(min(o, n)) for o, n in zip(old_counts[:axis], new_counts[:axis], strict=True)
        ]
        ranges.append(range(new_n, old_n))
        ranges.extend(range(o) for o in old_counts[axis + 1 :])
        outside.extend(itertools.product(*ranges))
    return sorted(outside)


def cut_regions(old: ArrayMetadata, new_shape: Sequence[int]) -> list[tuple[slice, ...]]:
    """The parts of array `old` that a shrink to `new_shape` cuts off but that stay in
    stored objects (shards, else chunks) the new shape still touches: disjoint boxes in
    `old`'s coordinates, one per shrunk axis, to be filled so that a later grow shows
    fill values there, as HDF5 prunes a shrunk dataset's edge chunks."""
    if any(n == 0 for n in new_shape):
        return []  # no object survives: all of them are deleted
    kept = [min(b, n) for b, n in zip(old.shape, new_shape, strict=True)]
    ends = [_object_end(old, axis, k) for axis, k in enumerate(kept)]
    regions = []
    for axis, (before, after) in enumerate(zip(old.shape, new_shape, strict=True)):
        if after >= before or ends[axis] == after:
            continue  # not shrunk, or cut at an object's edge: nothing left behind
        box = [slice(0, k) for k in kept[:axis]]  # earlier axes' cuts are their own
        box.append(slice(after, min(before, ends[axis])))
        box.extend(
            slice(0, min(b, e))
            for b, e in zip(old.shape[axis + 1 :], ends[axis + 1 :], strict=True)
        )
        regions.append(tuple(box))
    return regions


def past_end_part(meta: ArrayMetadata, coords: Sequence[int]) -> tuple[slice, ...] | None:
    """The part within array `meta`'s shape of its stored object at grid `coords`, where
    the object reaches past the shape's end (the last, partial object of an axis); None
    where it lies wholly within the shape."""
    spans = []
    for axis, index in enumerate(coords):
        if meta.chunk_grid is None:
            start = index * meta.chunk_shape[axis]
            stop = start + meta.chunk_shape[axis]
        else:
            edges = meta.chunk_grid.axes[axis]
            start = int(edges.start_of(index))
            stop = start + int(edges.size_of(index))
        spans.append((start, stop))
    if all(stop <= size for (_, stop), size in zip(spans, meta.shape, strict=True)):
        return None
    return tuple(
        slice(start, min(stop, size)) for (start, stop), size in zip(spans, meta.shape, strict=True)
    )


def _object_end(meta: ArrayMetadata, axis: int, extent: int) -> int:
    """Where the stored object holding element `extent - 1` along `axis` ends."""
    if extent == 0:
        return 0
    if meta.chunk_grid is None:
        step = meta.chunk_shape[axis]
        return -(-extent // step) * step
    edges = meta.chunk_grid.axes[axis]
    last = edges.chunk_of(extent - 1)
    return int(edges.start_of(last) + edges.size_of(last))


def grown(
    meta: ArrayMetadata, values_shape: tuple[int, ...], axis: int, name: str
) -> ArrayMetadata:
    """The metadata of array `name` (`meta`) after appending values of `values_shape`
    along `axis` (`appended`'s shape, `resized`'s grid)."""
    shape, _ = appended(meta.shape, values_shape, axis, name)
    return resized(meta, shape, name)[0]


#: An append's growth: the shape before it, and the shape it grew to.
Growth = tuple[tuple[int, ...], tuple[int, ...]]


def taken_back(meta: ArrayMetadata, shapes: Growth, name: str) -> ArrayMetadata:
    """The metadata of array `name` (`meta`) with an append's growth (`shapes`: from,
    to) taken back: where no change came after it (another append), else `meta`."""
    shape, grown_to = shapes
    return resized(meta, shape, name)[0] if meta.shape == grown_to else meta


def left_grown(name: str, grown_to: tuple[int, ...], undo: BaseException) -> str:
    """What an error of an append to array `name` adds where taking its growth back
    failed (`undo`): the array may stay grown, its new rows not all written."""
    return (
        f"array {name} may stay grown to {grown_to}, its new rows partly fill values: "
        f"taking the append's growth back failed ({undo}); read its shape before "
        "appending again"
    )


def appended(
    shape: tuple[int, ...], values_shape: tuple[int, ...], axis: int, name: str
) -> tuple[tuple[int, ...], tuple[slice, ...]]:
    """The shape of array `name` (of `shape`) grown along `axis` by values of
    `values_shape`, and the region those values go to."""
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise AxisError(f"axis {axis} is out of bounds for {ndim}-d {name}")
    axis %= ndim
    if len(values_shape) != ndim or any(
        v != s for i, (v, s) in enumerate(zip(values_shape, shape, strict=True)) if i != axis
    ):
        raise ValueShapeError(
            f"cannot append data of shape {values_shape} to {name} of shape "
            f"{shape} along axis {axis}: every other dimension must match"
        )
    new = tuple(s + values_shape[axis] if i == axis else s for i, s in enumerate(shape))
    region = tuple(slice(shape[i], new[i]) if i == axis else slice(None) for i in range(ndim))
    return new, region
