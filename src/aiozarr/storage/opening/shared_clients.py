"""The stores `from_url` opens on S3, GCS, Azure and HTTP, shared within a process.

Every URL of one bucket (container, HTTP URL), opened with the same options under the
same credential environment, sends its requests through one obstore client, and so
through one pool of connections: a client opens a connection per request in flight and
keeps it for the next, so thirty arrays of a bucket opened by URL each held their own
(~60 connections apiece after a read of 64 chunks, and a server that bounds connections
refused the next). A client costs ~10 ms to build (the HTTP client, TLS roots), which a
dask task or a reopened dataset pays once this way.

Each URL keeps its own `ObjectStore` (rooted at the URL's path, its keys below it) and
so its own runtime: budgets, write locks and statistics are a store's, as for any other
store; reopening a URL gives the same store back, so a reopened dataset's first read is
hedged with what earlier reads measured.

A forked child builds its own clients: a client's connections and the runtime behind
them belong to the parent.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from aiozarr.storage.backends.object_store import ObjectStore

__all__ = ["shared_store"]

_CACHE_SIZE = 64  # clients, and stores: the oldest are dropped (their users keep theirs)
_clients: dict[Hashable, Any] = {}
_stores: dict[Hashable, ObjectStore] = {}
_lock = threading.Lock()
_T = TypeVar("_T")


def shared_store(
    url: str, root: str, prefix: str, settings: Hashable, build: Callable[[], Any]
) -> ObjectStore:
    """The store for `url`: keys below `prefix` of the obstore client for `root` that
    `build()` makes (called only if this process has none for `root` and `settings`,
    everything else that decides how requests are sent: options, credentials' sources)."""
    from aiozarr.storage.backends.object_store import ObjectStore

    with _lock:
        store = _stores.get((url, settings))
        client = _clients.get((root, settings))
    if store is not None:
        return store
    if client is None:
        client = _remember(_clients, (root, settings), build())
    store = ObjectStore(client, prefix=prefix)
    store.runtime  # noqa: B018 (made now, so the stores `with_read_only` gives share it)
    return _remember(_stores, (url, settings), store)


def _remember(cache: dict[Hashable, _T], key: Hashable, value: _T) -> _T:
    """What `cache` holds at `key`: `value`, unless another thread put one there first."""
    with _lock:
        kept = cache.setdefault(key, value)
        while len(cache) > _CACHE_SIZE:
            del cache[next(iter(cache))]
    return kept


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # a parent thread may have held it at fork time
    _clients.clear()
    _stores.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
