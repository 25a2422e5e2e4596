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

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from aiozarr.storage.backends.obstore_client import ClientTable

if TYPE_CHECKING:
    from aiozarr.storage.backends.object_store import ObjectStore

__all__ = ["shared_store"]

_clients = ClientTable()  # by bucket (or HTTP URL) and settings
_stores = ClientTable()  # by URL and settings


def shared_store(
    url: str, root: str, prefix: str, settings: Hashable, build: Callable[[], Any]
) -> ObjectStore:
    """The store for `url`: keys below `prefix` of the obstore client for `root` that
    `build()` makes (called only if this process has none for `root` and `settings`,
    everything else that decides how requests are sent: options, credentials' sources)."""
    from aiozarr.storage.backends.object_store import ObjectStore

    store: ObjectStore | None = _stores.get((url, settings))
    if store is not None:
        return store
    client = _clients.get((root, settings))
    if client is None:
        client = _clients.keep((root, settings), build())
    store = ObjectStore(client, prefix=prefix)
    store.runtime  # noqa: B018 (made now, so the stores `with_read_only` gives share it)
    return _stores.keep((url, settings), store)  # type: ignore[no-any-return]
