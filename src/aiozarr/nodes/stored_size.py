"""What an array takes in its store: its keys (one listing), the chunk objects among
them, and their bytes."""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable, Iterator

import anyio

from aiozarr.errors import unwrap_group
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding
from aiozarr.selection.chunk_grid import grid_counts
from aiozarr.storage.protocol import Store

#: The names of metadata documents; every other key of an array is a stored chunk object.
_METADATA_NAMES = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})


async def array_keys(store: Store, path: str, chunk_prefix: str) -> list[str]:
    """Every key of the array at `path` (metadata and chunks): one listing, and one more
    of `chunk_prefix` where its chunks lie apart from its metadata (the 2020 draft)."""
    prefix = f"{path}/" if path else ""
    keys = [k async for k in store.list_prefix(prefix)]
    if chunk_prefix != prefix:
        keys += [k async for k in store.list_prefix(chunk_prefix)]
    return keys


def chunk_objects(meta: ArrayMetadata, prefix: str, keys: Iterable[str]) -> list[str]:
    """The keys among an array's `keys` that name one of its stored objects (shards when
    sharded) inside its shape: chunk keys of its grid (they start with `prefix`), parsed
    with its encoding. Other objects below the array are not chunks (a directory marker
    blob `c/` some Azure tools write, a file of notes), nor are objects a shrink left."""
    return [key for key, _, inside in _grid_objects(meta, prefix, keys) if inside]


def _grid_objects(
    meta: ArrayMetadata, prefix: str, keys: Iterable[str]
) -> Iterator[tuple[str, tuple[int, ...] | None, bool]]:
    """Each of `keys` below the array's chunks that is no metadata document: the key,
    the grid coordinates it names (None: no chunk key of `meta`), and whether they lie
    inside the array's shape."""
    counts = grid_counts(meta.shape, meta.grid)
    match = _key_pattern(meta.chunk_key_encoding, meta.ndim).fullmatch
    start = len(prefix)
    for key in keys:
        if not key.startswith(prefix) or key.rpartition("/")[2] in _METADATA_NAMES:
            continue
        found = match(key, start)
        if found is None:
            yield key, None, False
            continue
        coords = tuple(map(int, found.groups()))
        yield key, coords, all(map(operator.lt, coords, counts))


async def total_bytes(store: Store, keys: list[str]) -> int:
    """The size of the objects at `keys` together (their sizes asked concurrently; a key
    gone meanwhile counts 0)."""
    sizes: list[int | None] = [None] * len(keys)

    async def size(i: int, key: str) -> None:
        sizes[i] = await store.getsize(key)

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for i, key in enumerate(keys):
                tg.start_soon(size, i, key)
    return sum(s or 0 for s in sizes)


async def listed_object_coords(
    store: Store, prefix: str, meta: ArrayMetadata
) -> list[tuple[int, ...]] | None:
    """`object_coords` of the array `meta` whose chunk keys start with `prefix` (its
    `chunk_prefix`), from one listing; None where the store cannot list."""
    if not store.listable:
        return None
    return object_coords(meta, prefix, [key async for key in store.list_prefix(prefix)])


def object_coords(
    meta: ArrayMetadata, prefix: str, keys: Iterable[str]
) -> list[tuple[int, ...]] | None:
    """The grid coordinates, in C order, of the stored objects (shards, else chunks) of
    the array `meta` among its listed `keys` (its chunk keys start with `prefix`), each
    parsed with its chunk key encoding; objects past its shape are left out. None when a
    key is neither a document nor a chunk key of the array: the caller walks the grid."""
    found: set[tuple[int, ...]] = set()
    for _, coords, inside in _grid_objects(meta, prefix, keys):
        if coords is None:
            return None
        if inside:
            found.add(coords)
    return sorted(found)


#: Stands for one coordinate in the key an encoding writes (`_key_pattern`).
_FIELD = "\x00"


@functools.cache
def _key_pattern(encoding: ChunkKeyEncoding, ndim: int) -> re.Pattern[str]:
    """What the keys `encoding` gives chunks of `ndim` dimensions look like: the key it
    writes (its own rule: v3, v2, the 2020 draft's `c0/0`), each coordinate a number as
    it writes numbers (no sign, no leading zero) in a group."""
    template = encoding.encode((_FIELD,) * ndim)  # type: ignore[arg-type]
    return re.compile(re.escape(template).replace(_FIELD, r"(0|[1-9][0-9]*)"))
