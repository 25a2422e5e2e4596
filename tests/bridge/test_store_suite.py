"""zarr-python's own store test suite (`zarr.testing.store.StoreTests`) on
`aiozarr.zarr.Store`, over a memory store, a local directory (by path and as an aiozarr
`LocalStore`), the S3 emulator and a zarr-python store (a wrapper of zarr's
`MemoryStore`: icechunk's sessions are no general key-value stores, the suite's keys and
values are refused there).

The suite's `set` / `get` helpers write and read through the aiozarr store underneath,
so what the suite checks is the bridge's own calls. Its sync-door tests (`get_sync`,
`set_sync`, `delete_sync`) skip: the store has no sync door (docs/decisions/
zarr-store-bridge.md).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import zarr
from zarr.core.buffer import cpu
from zarr.testing.store import StoreTests

from aiozarr.emulator import Emulator
from aiozarr.storage.backends.local import LocalStore
from aiozarr.zarr import Store


class _BridgeTests(StoreTests[Store, cpu.Buffer]):
    store_cls = Store
    buffer_cls = cpu.Buffer

    async def set(self, store: Store, key: str, value: cpu.Buffer) -> None:
        await store.aiozarr_store.set(key, value.to_bytes())

    async def get(self, store: Store, key: str) -> cpu.Buffer:
        data = await store.aiozarr_store.get(key)
        assert data is not None, f"{key!r} is missing"
        return self.buffer_cls.from_bytes(data)

    def test_store_repr(self, store: Store) -> None:
        assert repr(store) == f"aiozarr.zarr.Store({store.aiozarr_store!r})"

    def test_store_supports_writes(self, store: Store) -> None:
        assert store.supports_writes

    def test_store_supports_listing(self, store: Store) -> None:
        assert store.supports_listing


class TestMemory(_BridgeTests):
    @pytest.fixture
    def store_kwargs(self) -> dict[str, Any]:
        return {"url_or_store": f"memory://bridge-{uuid.uuid4().hex}"}


class TestLocalPath(_BridgeTests):
    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"url_or_store": str(tmp_path)}


class TestLocalStoreObject(_BridgeTests):
    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"url_or_store": LocalStore(tmp_path)}


class TestEmulatorS3(_BridgeTests):
    @pytest.fixture
    def store_kwargs(self, emulator: Emulator) -> dict[str, Any]:
        return {
            "url_or_store": emulator.s3_url(f"bridge-{uuid.uuid4().hex}"),
            "storage_options": emulator.storage_options(),
        }


class TestZarrStoreObject(_BridgeTests):
    """A zarr-python store, read and written through its own API (`ZarrStore`)."""

    @pytest.fixture
    def store_kwargs(self) -> dict[str, Any]:
        return {"url_or_store": zarr.storage.LoggingStore(zarr.storage.MemoryStore())}
