"""`GuardedHTTPStore` (the http(s) store a reference file opens) runs the store contract
on the emulator's plain HTTP: read-only, no listing."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import NoReturn

import pytest
from tests.servers import unique_prefix

from aiozarr.emulator import Emulator
from aiozarr.errors import ReferenceTargetError
from aiozarr.storage.backends.guarded_http import GuardedHTTPStore
from aiozarr.storage.protocol import Store
from aiozarr.testing.store_contract import StoreContract

_STAMPS = itertools.count(1_000_000_000 * 10**9, 1_000)  # 2001, a microsecond apart


def _no_redirect(source: str, location: str) -> NoReturn:
    raise ReferenceTargetError(f"{source} redirected to {location}")


class TestGuardedHTTP(StoreContract):
    writable = False
    listable = False
    supports_delete_prefix = False

    @pytest.fixture
    def store(self, emulator: Emulator) -> Store:
        prefix = unique_prefix()
        self.directory = emulator.root / prefix
        self.directory.mkdir(parents=True)
        return GuardedHTTPStore(emulator.http_url(prefix), check_redirect=_no_redirect)

    async def set_raw(self, store: Store, key: str, value: bytes) -> None:
        path: Path = self.directory / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value)
        # Modified long ago (each write at its own time): an answer whose Last-Modified
        # is within a second of its Date is no version (docs/decisions/storage.md).
        stamp = next(_STAMPS)
        os.utime(path, ns=(stamp, stamp))
