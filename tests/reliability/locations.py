"""`StoreFactory`: store objects over one new, empty location of one backend.

The reliability tests' `make_store` fixture (conftest.py) is one of these. What a test
gets from each call is explicit:

- `make_store()`: a NEW store object over the location at every call. Objects over one
  location are equal (one directory, one bucket prefix, one dict), and equal stores
  share this process's runtime: one write-lock table, one request budget. A test that
  wants one store object calls it once and keeps what it got.
- `make_store(own_locks=True)`: a new store over the location that shares no write lock
  (nor request budget) with any other store object, as another process's store would:
  a `CountingStore` with a runtime of its own. (A plain `CountingStore` is not enough: a
  wrapper passes its inner store's runtime through, and the inner stores are equal.)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from obstore.store import S3Store
from tests.servers import MOTO_BUCKET

from aiozarr.emulator import Emulator
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.policy.runtime import StoreRuntime
from aiozarr.storage.protocol import Store
from aiozarr.storage.protocol.wrapper import WrapperStore

#: The backends a test may name: `@pytest.mark.parametrize("make_store", [...], indirect=True)`.
BACKENDS = ("memory", "local", "s3", "moto")


class _OwnRuntime(CountingStore):
    """A counting store whose runtime (write locks, budgets) is its own, not its inner
    store's: it is equal only to itself, so no other store shares it."""

    @property
    def runtime(self) -> StoreRuntime:
        return super(WrapperStore, self).runtime  # Store's, not the wrapper's pass-through


class StoreFactory:
    """Store objects over one new, empty location of the backend `kind` (see the module)."""

    def __init__(self, kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        if kind not in BACKENDS:
            raise ValueError(f"unknown backend {kind!r}: one of {BACKENDS}")
        self.kind = kind
        self._new = _location(kind, request, tmp_path)

    def __call__(self, *, own_locks: bool = False) -> Store:
        store = self._new()
        return _OwnRuntime(store) if own_locks else store

    def __repr__(self) -> str:
        return f"StoreFactory({self.kind!r})"


def _location(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """A function returning a new store object over one new location of `kind`; the
    servers (the emulator, moto) are started only for the backends that use them."""
    name = f"{kind}-{uuid.uuid4().hex[:10]}.zarr"
    if kind == "memory":
        first = MemoryStore()
        return lambda: first.with_read_only(False)  # the same dict, versions and lock
    if kind == "local":
        return lambda: LocalStore(tmp_path / name)
    if kind == "s3":
        emulator: Emulator = request.getfixturevalue("emulator")
        url, options = emulator.s3_url(name), emulator.storage_options()
        return lambda: from_url(url, storage_options=options)
    moto = request.getfixturevalue("moto_s3_options")
    return lambda: ObjectStore(S3Store(MOTO_BUCKET, prefix=name, **moto))
