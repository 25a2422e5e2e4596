"""`open_group(mode="a")` on a missing group while another writer creates the node: the
loser of the create opens the winner's group (mode "a" opens or creates), and still
refuses an array. The other writer's create is forced between this call's look and
its own create."""

from __future__ import annotations

import json
from typing import Any

import pytest

import aiozarr
from aiozarr.errors import NodeExistsError
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Buffer, Version

GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {"by": "the other writer"}}
ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [2],
    "data_type": "int32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default"},
    "fill_value": 0,
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
}


class _Racing(MemoryStore):
    """A store where another writer creates `key` just before this process's first
    exclusive create of it."""

    def __init__(self, key: str, document: dict[str, Any]) -> None:
        super().__init__()
        self.key, self.document, self.raced = key, document, False

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        if key == self.key and expected is None and not self.raced:
            self.raced = True
            await super().set_if(key, json.dumps(self.document).encode(), None)
        await super().set_if(key, value, expected, claim=claim)


async def test_mode_a_opens_the_group_another_writer_created() -> None:
    store = _Racing("g/zarr.json", GROUP)
    group = await aiozarr.open_group_async(store, "g", mode="a", cache_recheck=True)
    assert store.raced
    assert group.attrs == {"by": "the other writer"}


async def test_mode_a_still_refuses_an_array_created_meanwhile() -> None:
    store = _Racing("g/zarr.json", ARRAY)
    with pytest.raises(NodeExistsError):
        await aiozarr.open_group_async(store, "g", mode="a")
    assert store.raced


async def test_mode_w_minus_still_refuses_the_group_created_meanwhile() -> None:
    store = _Racing("g/zarr.json", GROUP)
    with pytest.raises(NodeExistsError):
        await aiozarr.open_group_async(store, "g", mode="w-")
