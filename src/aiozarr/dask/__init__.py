"""dask on aiozarr: shard-aligned dask arrays, and writes that never share a shard.

    darr = aiozarr.dask.to_dask(aiozarr.open_array(url, storage_options=...))
    aiozarr.dask.store(darr * 2, aiozarr.open_array(out_url, mode="r+", ...))

An `Array` pickles to its store's configuration, its path and its metadata (a few hundred
bytes): each worker process reopens it lazily and runs it on its own aiozarr event loop
and connection pool (one per process, rebuilt after `fork`). Importing this module imports
dask; `import aiozarr` does not. What a write must not read (its own blocks' values, a
node it deletes) is checked in `in_place.py`.
"""

from __future__ import annotations

import itertools
import math
import os
import uuid
import weakref
from collections.abc import Mapping
from typing import Any

from aiozarr.errors import (
    InPlaceWriteError,
    OverlappingWriteError,
    SelectionError,
    ValueShapeError,
    require_extra,
)

require_extra("aiozarr.dask", "dask", "dask")

# ruff: noqa: E402 (dask is looked for first, to name the extra when it is missing)
import dask.array as da
import numpy as np
from dask.base import tokenize

from aiozarr import config
from aiozarr.api import StoreLike, create_array, resolve_store
from aiozarr.dask.in_place import check_not_in_place, check_not_overwritten
from aiozarr.nodes.array import AsyncArray
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store
from aiozarr.sync import Array

__all__ = [
    "InPlaceWriteError",
    "OverlappingWriteError",
    "from_dask",
    "store",
    "to_dask",
    "write_grid",
]


def _sync(array: Array | AsyncArray) -> Array:
    if isinstance(array, AsyncArray):
        return Array(array)
    if not isinstance(array, Array):  # a group or numpy's failed on a missing attribute
        raise TypeError(f"expected an aiozarr array, got {type(array).__name__}")
    return array


def write_grid(array: Array | AsyncArray) -> tuple[int, ...] | tuple[tuple[int, ...], ...]:
    """The shape of the unit one write replaces whole: the shard, or the chunk.

    On a rectilinear grid units differ in shape: per axis, the length of each unit
    inside the array (dask's `chunks`).
    """
    if array.rectilinear_grid is not None:
        return tuple(sizes or (0,) for sizes in array.write_chunk_sizes)
    return array.shards or array.chunks


def _is_boundary(array: Array, axis: int, position: int) -> bool:
    """Whether a unit (shard or chunk) of `array` starts at `position` along `axis`."""
    if position == array.shape[axis]:
        return True
    grid = array.rectilinear_grid
    if grid is None:
        return position % write_grid(array)[axis] == 0  # type: ignore[operator]
    edges = grid.axes[axis]
    return int(edges.start_of(edges.chunk_of(position))) == position


def to_dask(
    array: Array | AsyncArray,
    chunks: Any = None,
    *,
    name: str | None = None,
) -> da.Array:
    """A lazy dask array over `array`, one block per shard (per chunk when unsharded).

    Each task then reads its shard with one batched request; on a rectilinear grid the
    blocks are its chunks (or shards), each of its own size. `chunks` overrides the
    block shape (dask's spellings). A selection of the dask array is passed on to the
    read of each block it touches (dask fuses it into the block's read), so a few
    elements of a shard read their inner chunks, not the whole shard.

    The graph's name says which array is read (where its store is, its path, shape,
    dtype and blocks), not what it holds: two calls on one array give one name, so dask
    merges their graphs, and blocks a cluster still holds under that name (`persist`)
    are served again after the array is written. After writing to an array whose
    blocks may be held, pass a `name` of your own (e.g. one per version of the data).
    """
    sync = _sync(array)
    blocks = chunks if chunks is not None else (write_grid(sync) or sync.shape)
    # Deterministic where the store says where its data is: the same array opened twice
    # gives the same graph keys.
    token = tokenize(_data_of(sync.store), sync.path, sync.shape, str(sync.dtype), blocks)
    return da.from_array(
        sync,
        chunks=blocks,
        name=name or f"aiozarr-{token}",
        lock=False,
        asarray=False,
        # aiozarr takes numpy's selections, lists too; with fancy=False dask never fused
        # a selection into the block's read and every task read its whole shard
        fancy=True,
        meta=np.empty((0,) * sync.ndim, dtype=sync.dtype),
    )


#: A name for the data of each store that cannot say where it is (`_data_of`).
_UNPLACED: weakref.WeakKeyDictionary[Store, str] = weakref.WeakKeyDictionary()


def _data_of(store: Store) -> object:
    """What names `store`'s data in a graph: where it is (`Store.key_space`: a directory,
    a bucket and prefix), or for a store that cannot say (memory, a reference file's
    dict) a name of its own. Its repr named it before, and two reference stores over
    different files share one (`ReferenceStore('<dict>')`): dask merged their blocks."""
    space, prefix = store.key_space()
    if not isinstance(space, Store):
        return space, prefix
    return _UNPLACED.setdefault(store, uuid.uuid4().hex)


class _Settings:
    """A write target that puts aiozarr settings in force around each block's write
    and read (settings do not travel to dask's workers by themselves: its pickle carries
    them with the array)."""

    __slots__ = ("array", "settings")

    def __init__(self, array: Array, settings: Mapping[str, Any]) -> None:
        self.array, self.settings = array, dict(settings)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim

    def __getitem__(self, selection: Any) -> Any:
        # `return_stored=True` reads each block back from the target after its write.
        with config.set(**self.settings):
            return self.array[selection]

    def __setitem__(self, selection: Any, value: Any) -> None:
        with config.set(**self.settings):
            self.array[selection] = value


def store(
    source: da.Array,
    target: Array | AsyncArray,
    *,
    region: tuple[slice, ...] | None = None,
    lock: Any = None,
    safe: bool = True,
    compute: bool = True,
    write_empty_chunks: bool | None = None,
    partial_edges: bool = False,
    **kwargs: Any,
) -> Any:
    """`dask.array.store(source, target)`, refusing block layouts that lose data.

    Writing part of a shard (or chunk) reads, merges and rewrites all of it; two tasks
    doing that at once for the same shard lose one task's values. Unless `lock` is given
    (a lock every writer shares, such as `distributed.Lock`) or `safe=False`, blocks must
    start and end on shard boundaries (chunk boundaries when unsharded), or at the array's
    edge: otherwise `OverlappingWriteError` names the first bad boundary. With
    `partial_edges`, a `region` may start and end inside a shard, as xarray lets appends
    (mode "a") do: its first and last blocks are the only writers of those shards in this
    call (another writer of their other part is the caller's to rule out).
    Unless `safe=False`, a `source` that reads `target` (`store(f(to_dask(a)), a)`) is
    refused with `InPlaceWriteError` where one block reads values another block writes
    (`to_dask(a)[::-1]`, `.T`, a sum): tasks run in any order, so it would read them
    before or after they are replaced; blocks that each read only what they write (or
    what the write leaves, outside `region`) update the array in place.
    `write_empty_chunks` is the aiozarr setting of that name, in force on every worker.
    With `compute=False`, a `dask.delayed.Delayed` that writes when computed.
    """
    if "regions" in kwargs:  # dask's spelling: it went on to dask, the shape refused
        raise TypeError("aiozarr.dask.store() takes region= (one target), not dask's regions=")
    sync = _sync(target)
    _check_known_shape(source, repr(sync))
    if region is not None:
        region = _checked_region(region, sync)
    want = _region_shape(region, sync.shape) if region else sync.shape
    if source.shape != want:
        raise ValueShapeError(
            f"cannot store a dask array of shape {source.shape} into {sync!r}: "
            f"{'its region' if region else 'it'} has shape {want}"
        )
    if safe and not lock:
        _check_aligned(source, sync, region, partial_edges)
    if safe:
        check_not_in_place(source, sync, region)
    writer: Any = sync
    if write_empty_chunks is not None:
        writer = _Settings(sync, {"write_empty_chunks": write_empty_chunks})
    return da.store(source, writer, regions=region, lock=lock or False, compute=compute, **kwargs)


def _check_known_shape(source: da.Array, where: str) -> None:
    """`ValueShapeError` for a dask array whose block lengths are not known yet (after a
    boolean mask): it was refused for a shape of nan, or by `create_array`'s metadata.
    `TypeError` for a source that is not a dask array."""
    if not isinstance(source, da.Array):
        raise TypeError(
            f"expected a dask array to store into {where}, got {type(source).__name__} "
            "(`dask.array.from_array(values, chunks=...)`, or write it with `array[...] =`)"
        )
    if any(math.isnan(n) for sizes in source.chunks for n in sizes):
        raise ValueShapeError(
            f"cannot store a dask array of unknown chunk sizes ({source.shape}) into "
            f"{where}: call `.compute_chunk_sizes()` on it first"
        )


def check_aligned(
    source: da.Array,
    target: Array | AsyncArray,
    region: tuple[slice, ...] | None = None,
    *,
    partial_edges: bool = False,
    safe: bool = True,
) -> None:
    """`OverlappingWriteError` where `store(source, target, region=region,
    partial_edges=partial_edges)` would refuse the blocks of `source`, checked before
    anything is written (`target` may be a layout only: its shape and grid are read, and
    where it is, for `InPlaceWriteError`). `safe=False`: the `InPlaceWriteError` only
    (blocks may share chunks, as xarray's `safe_chunks=False` lets them)."""
    sync = _sync(target)
    checked = None if region is None else _checked_region(region, sync)
    if safe:
        _check_aligned(source, sync, checked, partial_edges)
    check_not_in_place(source, sync, checked)


def _checked_region(region: Any, target: Array) -> tuple[slice, ...]:
    """`region` as one slice of step 1 per axis of `target`, its bounds resolved (dask
    takes no negative bounds); `SelectionError` for anything else."""
    if not isinstance(region, tuple | list) or len(region) != target.ndim:
        raise SelectionError(f"region {region!r}: one slice per axis of {target!r}")
    out = []
    for axis, (s, n) in enumerate(zip(region, target.shape, strict=True)):
        start, stop, step = s.indices(n) if isinstance(s, slice) else (0, 0, 0)
        if step != 1:
            raise SelectionError(f"region {region!r}: axis {axis} is not a slice of step 1")
        out.append(slice(start, max(start, stop)))
    return tuple(out)


def _region_shape(region: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(len(range(*s.indices(n))) for s, n in zip(region, shape, strict=False))


def _check_aligned(
    source: da.Array,
    target: Array,
    region: tuple[slice, ...] | None,
    partial_edges: bool,
    named: str | None = None,
) -> None:
    """`named`: what the messages call the target (a layout planned in memory is not
    where the user writes)."""
    grid = write_grid(target)
    what = "shard" if target.is_sharded else "chunk"
    starts = [0] * target.ndim
    if region is not None:
        starts = [s.indices(n)[0] for s, n in zip(region, target.shape, strict=True)]
        if not partial_edges:
            _check_region_edges(target, region, named)
    # every block edge inside the target, in the target's coordinates
    # (running sums: summing each prefix anew was quadratic in the blocks of an axis)
    shifted = [
        [starts[axis] + int(edge) for edge in itertools.accumulate(sizes[:-1])]
        for axis, sizes in enumerate(source.chunks)
    ]
    for axis, edges in enumerate(shifted):
        for edge in edges:
            if not _is_boundary(target, axis, edge):
                raise OverlappingWriteError(
                    f"dask blocks {source.chunks[axis]} on axis {axis} put a block edge at "
                    f"{edge}, inside a {what} of {grid[axis]} in {named or repr(target)}: two "
                    f"tasks would write the same {what} and one write would be lost. Rechunk "
                    f"to multiples of {grid} (`darr.rechunk({grid})`); `aiozarr.dask.store` "
                    "also takes lock= (shared by all workers) or safe=False"
                )


def _check_region_edges(target: Array, region: tuple[slice, ...], named: str | None) -> None:
    """`OverlappingWriteError` for a region that starts, or ends before the array's end,
    inside a unit (shard or chunk): its writer would share that unit with the writer of
    the neighbouring region. xarray's rule for its mode "r+" (`safe_chunks`)."""
    what = "shard" if target.is_sharded else "chunk"
    shown = ", ".join(f"{s.start}:{s.stop}" for s in region)
    for axis, (s, n) in enumerate(zip(region, target.shape, strict=True)):
        start, stop, _ = s.indices(n)
        for side, position in (("starts", start), ("ends", max(start, stop))):
            if _is_boundary(target, axis, position):
                continue
            low, high = _unit_around(target, axis, position)
            raise OverlappingWriteError(
                f"the region {side} at {position} on axis {axis}, inside the {what} "
                f"{low}:{high} (its boundaries are {low} and {high}) of {named or repr(target)}, "
                f"region [{shown}]: writes there would race with the neighbouring {what}'s writer; "
                "`aiozarr.dask.store` takes lock=, safe=False or partial_edges=True "
                "(xarray's to_zarr: mode='a' or safe_chunks=False)"
            )


def _unit_around(array: Array, axis: int, position: int) -> tuple[int, int]:
    """The bounds along `axis` of the unit (shard or chunk) holding `position`."""
    grid = array.rectilinear_grid
    if grid is None:
        size = write_grid(array)[axis]
        low = position // size * size  # type: ignore[operator]
        return low, min(low + size, array.shape[axis])  # type: ignore[operator]
    edges = grid.axes[axis]
    unit = edges.chunk_of(position)
    low = int(edges.start_of(unit))
    return low, min(low + int(edges.size_of(unit)), array.shape[axis])


def _block_chunks(blocks: tuple[tuple[int, ...], ...]) -> Any:
    """One chunk per dask block: per axis the block length where the blocks are regular
    (all alike, the last one shorter or alike), else their lengths (a rectilinear grid);
    taking the first block's length for irregular blocks made a layout `store` refused.
    Empty blocks (a masked array's, after `compute_chunk_sizes`) write nothing and get
    no chunk: a chunk of length 0 was refused as metadata."""
    axes: list[Any] = []
    for all_sizes in blocks:
        sizes = tuple(n for n in all_sizes if n)
        if not sizes:
            axes.append(1)
        elif all(n == sizes[0] for n in sizes[:-1]) and sizes[-1] <= sizes[0]:
            axes.append(sizes[0])
        else:
            axes.append(list(sizes))
    return tuple(axes) if all(isinstance(axis, int) for axis in axes) else axes


def from_dask(
    source: da.Array,
    target: StoreLike,
    path: str = "",
    *,
    lock: Any = None,
    safe: bool = True,
    compute: bool = True,
    storage_options: Mapping[str, Any] | None = None,
    **create_options: Any,
) -> Any:
    """Create an array at `target`/`path` shaped like `source` and store it there.

    `create_options` are `aiozarr.create_array`'s (`chunks`, `shards`, `compressors`,
    `zarr_format`, `overwrite`, ...); without `chunks` (and `shards`) each dask block
    becomes one chunk. Block alignment is checked as in `store`. With `compute=False`
    the array is created and the lazy write `store(compute=False)` gives (computing it
    writes the values) is returned instead of the array, as `dask.array.to_zarr` does:
    the array was returned and the write dropped, so nothing could ever write it.
    With `overwrite=True` and `safe`, a `source` that reads the array being replaced (or
    one under `path`) is refused with `InPlaceWriteError`: it is deleted first, so the
    write would read fill values.
    """
    _check_known_shape(source, f"{target!r}/{path}" if path else repr(target))
    if "chunks" not in create_options and "shards" not in create_options:
        create_options["chunks"] = _block_chunks(source.chunks)
    if safe and not lock:  # refused before anything is created, or overwritten
        planned = {k: v for k, v in create_options.items() if k != "overwrite"}
        layout = create_array(MemoryStore(), shape=source.shape, dtype=source.dtype, **planned)
        where = f"{os.fspath(target)}/{path}" if isinstance(target, str | os.PathLike) else target
        _check_aligned(source, layout, None, partial_edges=False, named=repr(where))
    resolved = resolve_store(target, mode="a", storage_options=storage_options)
    if safe and create_options.get("overwrite"):
        check_not_overwritten(source, resolved, path or create_options.get("name") or "")
    array = create_array(resolved, path, shape=source.shape, dtype=source.dtype, **create_options)
    written = store(source, array, lock=lock, safe=safe, compute=compute)
    return array if compute else written
