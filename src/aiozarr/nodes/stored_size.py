"""What an array takes in its store: its keys (one listing), the chunk objects among
them, and their bytes."""

from __future__ import annotations

import anyio

from aiozarr.errors import unwrap_group
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


def chunk_objects(keys: list[str]) -> list[str]:
    """The keys of stored chunk objects (shards when sharded) among an array's `keys`."""
    return [k for k in keys if k.rpartition("/")[2] not in _METADATA_NAMES]


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
