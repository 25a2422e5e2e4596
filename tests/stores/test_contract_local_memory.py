"""The store contract on the two stores that need no server: local disk and memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.testing.store_contract import StoreContract


class TestLocalStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> LocalStore:
        return LocalStore(tmp_path / "store")


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> MemoryStore:
        return MemoryStore()


class TestLocalStoreRawHooks(StoreContract):
    """Setup bypasses the store: files are written straight to disk."""

    writable = False
    supports_read_only = False

    @pytest.fixture
    def store(self, tmp_path: Path) -> LocalStore:
        return LocalStore(tmp_path, read_only=True)

    async def set_raw(self, store, key: str, value: bytes) -> None:  # type: ignore[no-untyped-def]
        path = store.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value)


class TestCountingStore(StoreContract):
    """The counting wrapper must not change what the store it wraps does."""

    @pytest.fixture
    def store(self) -> CountingStore:
        return CountingStore(MemoryStore())
