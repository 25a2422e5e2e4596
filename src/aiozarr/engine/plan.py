"""Selections -> what to fetch, grouped by stored object (pure; no I/O).

An unsharded array reads one stored chunk per projection. A sharded array is
indexed on its *inner* chunk grid; projections are grouped by the shard that
holds them, and a shard whose every inner chunk is needed is read whole. On a
rectilinear shard grid the inner grid is still regular (the inner chunk shape
divides every shard edge); each shard has its own layout.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from aiozarr.codecs import ShardLayout
from aiozarr.engine.stored_array import StoredArray
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.sizes import ceil_div


@dataclass(frozen=True, slots=True)
class ChunkSelection:
    """One stored chunk and where its selected values go."""

    key: str
    projection: ChunkProjection


@dataclass(frozen=True, slots=True)
class InnerSelection:
    """One inner chunk of a shard and where its selected values go."""

    inner_coords: tuple[int, ...]
    projection: ChunkProjection


@dataclass(slots=True)
class ShardSelection:
    """The inner chunks needed from one shard."""

    key: str
    shard_coords: tuple[int, ...]
    layout: ShardLayout
    inner: list[InnerSelection] = field(default_factory=list)
    whole: bool = False


def inner_grid_shape(meta: ArrayMetadata, layout: ShardLayout) -> tuple[int, ...]:
    """Shape of the inner-chunk grid over the whole array."""
    return _grid_shape(meta.shape, layout.chunk_shape)


@lru_cache(maxsize=256)
def _grid_shape(shape: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(ceil_div(s, c) for s, c in zip(shape, chunks, strict=True))


@lru_cache(maxsize=4096)
def _inner_chunks_inside(
    shard_coords: tuple[int, ...], per: tuple[int, ...], grid: tuple[int, ...]
) -> int:
    """How many inner chunks of a regular shard lie (at least partly) inside the array:
    fewer than it holds at the array's far edges. Worked out once per shard, as a point
    read asks for it on every read."""
    return math.prod(
        max(min(n, total - s * n), 0) for s, n, total in zip(shard_coords, per, grid, strict=True)
    )


def _is_whole(read: ShardSelection, inside: int) -> bool:
    """Whether `read` needs every one of the `inside` inner chunks its shard holds."""
    return len(read.inner) >= inside and len({r.inner_coords for r in read.inner}) == inside


def plan_chunks(
    meta: ArrayMetadata, prefix: str, projections: Iterable[ChunkProjection]
) -> list[ChunkSelection]:
    """One read per stored chunk of an unsharded array; keys start with `prefix`."""
    return [ChunkSelection(prefix + meta.chunk_key(p.chunk_coords), p) for p in projections]


def plan_shards(array: StoredArray, projections: Sequence[ChunkProjection]) -> list[ShardSelection]:
    """Group inner-chunk projections by shard; mark shards needed in full as `whole`."""
    layout = array.layout
    assert layout is not None
    if array.rectilinear is not None:
        return _plan_rectilinear_shards(array, layout, projections)
    meta, prefix = array.meta, array.prefix
    per = layout.chunks_per_shard
    coords = np.array([p.chunk_coords for p in projections], np.int64)
    coords = coords.reshape(len(projections), len(per))
    shard_of, inner_of = (part.tolist() for part in np.divmod(coords, np.array(per, np.int64)))
    shards: dict[tuple[int, ...], ShardSelection] = {}
    for p, shard, inner in zip(projections, shard_of, inner_of, strict=True):
        shard_coords = tuple(shard)
        read = shards.get(shard_coords)
        if read is None:
            read = shards[shard_coords] = ShardSelection(
                prefix + meta.chunk_key(shard_coords), shard_coords, layout
            )
        read.inner.append(InnerSelection(tuple(inner), p))
    grid = inner_grid_shape(meta, layout)
    for read in shards.values():
        read.whole = _is_whole(read, _inner_chunks_inside(read.shard_coords, per, grid))
    return list(shards.values())


def _plan_rectilinear_shards(
    array: StoredArray, layout: ShardLayout, projections: Sequence[ChunkProjection]
) -> list[ShardSelection]:
    """`plan_shards` on a rectilinear shard grid: shards found by searching edge offsets."""
    if not projections:
        return []
    grid = array.inner_grid  # shard edges counted in inner chunks
    coords = np.array([p.chunk_coords for p in projections], dtype=np.int64)
    shard = np.stack([a.chunk_of(coords[:, d]) for d, a in enumerate(grid.axes)], axis=1)
    origin = np.stack([a.start_of(shard[:, d]) for d, a in enumerate(grid.axes)], axis=1)
    inner = coords - origin
    shards: dict[tuple[int, ...], ShardSelection] = {}
    for p, s, i in zip(projections, shard.tolist(), inner.tolist(), strict=True):
        shard_coords = tuple(s)
        read = shards.get(shard_coords)
        if read is None:
            read = shards[shard_coords] = ShardSelection(
                array.key(shard_coords), shard_coords, array.layout_for(shard_coords)
            )
        read.inner.append(InnerSelection(tuple(i), p))
    total = inner_grid_shape(array.meta, layout)
    for read in shards.values():
        # inner chunks of this shard that lie (at least partly) inside the array
        count = 1
        for c, per, n, axis in zip(
            read.shard_coords, read.layout.chunks_per_shard, total, grid.axes, strict=True
        ):
            count *= max(min(per, n - int(axis.start_of(c))), 0)
        read.whole = _is_whole(read, count)
    return list(shards.values())
