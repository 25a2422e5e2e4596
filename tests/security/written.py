"""What a write left in a store: a refused write must leave nothing behind, so the
value-range tests snapshot every key of their store before and after."""

from __future__ import annotations

import asyncio

from aiozarr.storage.protocol import Store
from aiozarr.sync import run


async def _snapshot(store: Store) -> dict[str, bytes]:
    keys = [k async for k in store.list_prefix("")]
    values = await asyncio.gather(*(store.get(k) for k in keys))
    return {k: bytes(v) for k, v in zip(keys, values, strict=True) if v is not None}


def snapshot(store: Store) -> dict[str, bytes]:
    """Every key of `store` with its bytes."""
    return run(_snapshot, store)
