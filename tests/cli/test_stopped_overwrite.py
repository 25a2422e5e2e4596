"""An overwrite stopped while it deletes what is there: the node it replaces is gone
first, so none is left whose deleted chunks read as fill values."""

from __future__ import annotations

import pytest

import aiozarr
from aiozarr.errors import NodeNotFoundError, StoreError
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.tools.copying import copy


class StopsDeleting(MemoryStore):
    """Deletes a prefix key by key in listing order, as an object store deletes in
    batches, and stops after the first key."""

    async def delete_prefix(self, prefix: str) -> None:
        keys = sorted([key async for key in self.list_prefix(prefix)])
        if keys:
            await self.delete(keys[0])
            raise StoreError(f"stopped deleting {prefix!r}")


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_an_overwrite_stopped_while_deleting_leaves_no_array_that_reads_fill(
    zarr_format: int,
) -> None:
    src, dst = MemoryStore(), StopsDeleting()
    old = aiozarr.create_array(dst, shape=(40,), chunks=(10,), dtype="i4", zarr_format=zarr_format)
    old[...] = 5
    aiozarr.create_array(src, shape=(40,), chunks=(10,), dtype="i4", zarr_format=zarr_format)
    with pytest.raises(StoreError, match="stopped deleting"):
        copy(src, dst, overwrite=True)
    with pytest.raises(NodeNotFoundError):
        aiozarr.open_array(dst, mode="r")
