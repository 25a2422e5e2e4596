"""obstore's clients under aiozarr: their retries off (the request policy retries, once),
no whole-request timeout (the policy's, scaled to each request, counts), and one per
pickle in a process (`from_pickle`)."""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Hashable
from typing import Any

from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store

__all__ = ["CLIENT_TIMEOUT", "ClientTable", "from_pickle", "without_retries"]

# obstore's whole-request timeout (default 30 s) would cut big range reads short; the
# request policy's timeout, scaled to each request's size, is the one that counts.
CLIENT_TIMEOUT = "24h"


def without_retries(store: Any) -> Any:
    """The same obstore store with obstore's retries off (aiozarr retries, once).

    A built-in remote store is rebuilt from its own settings (config, prefix, client
    options, credential provider) with `max_retries: 0`, and with no whole-request
    timeout unless one was set. Anything else, or a store that cannot be rebuilt, is
    returned as it is.
    """
    retry_config = dict(getattr(store, "retry_config", None) or {})
    client = dict(getattr(store, "client_options", None) or {})
    if retry_config.get("max_retries") == 0 and "timeout" in client:
        return store
    retry_config["max_retries"] = 0
    client.setdefault("timeout", CLIENT_TIMEOUT)
    try:
        if isinstance(store, HTTPStore):
            return HTTPStore(store.url, client_options=client, retry_config=retry_config)
        if isinstance(store, S3Store | GCSStore | AzureStore):
            return type(store)(
                prefix=store.prefix,
                config=store.config,
                client_options=client,
                retry_config=retry_config,
                credential_provider=store.credential_provider,
            )
    except Exception:  # an exotic configuration: keep the user's store as given
        return store
    return store


class ClientTable:
    """Built obstore clients (or stores over them) by what built them, kept per process:
    the first kept for a key is everyone's, the oldest beyond `size` are dropped (their
    users keep theirs). A forked child starts empty: a client's connections belong to
    the parent."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._kept: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
            os.register_at_fork(after_in_child=self._forget_in_child)

    def get(self, key: Hashable) -> Any:
        """What is kept for `key`, or None."""
        with self._lock:
            return self._kept.get(key)

    def keep(self, key: Hashable, value: Any) -> Any:
        """What is kept for `key`: `value`, unless another thread kept one first."""
        with self._lock:
            kept = self._kept.setdefault(key, value)
            while len(self._kept) > self._size:
                del self._kept[next(iter(self._kept))]
        return kept

    def _forget_in_child(self) -> None:
        self._lock = threading.Lock()  # a parent thread may have held it at fork time
        self._kept.clear()


_from_pickles = ClientTable()


def from_pickle(data: bytes) -> Any:
    """The obstore store pickled as `data`, unpickled once per process: the stores of a
    bucket sent to a process (one dask task each) share one client and its connections,
    and pay for building it (~10 ms) once."""
    store = _from_pickles.get(data)
    return store if store is not None else _from_pickles.keep(data, pickle.loads(data))
