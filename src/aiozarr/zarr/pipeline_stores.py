"""The aiozarr store behind a zarr-python store, for the codec pipeline.

Where aiozarr can address the zarr store's objects itself, it does: zarr's `LocalStore`
(an aiozarr `LocalStore` on the same directory), its obstore-backed `ObjectStore` (an
aiozarr `ObjectStore` on the same obstore store: aiozarr's request policy, coalescing and
versions) and `aiozarr.zarr.Store` (the aiozarr store it wraps). Every other zarr store
(`MemoryStore`, icechunk's, fsspec, zip, wrappers, subclasses of the above) is read and
written through its own API by the `ZarrStore` adapter: the engine still batches, but each
key's coalesced ranges are one call of the zarr store, which maps keys to objects its
own way. A store that cannot delete (a zip) leaves its writes to zarr-python's pipeline:
the engine deletes chunks written as the fill value.

The aiozarr store is made once per zarr store and kept while the zarr store lives, so
its budgets, statistics and write locks are shared by every array read through it.
"""

from __future__ import annotations

import weakref
from typing import Any

from aiozarr import fork_safe
from aiozarr.storage.protocol import Store

__all__ = ["aiozarr_store_for"]

#: (id of what a store is made for, read-only) -> (a weak reference to that, the aiozarr
#: store). zarr's stores compare by value and are not hashable, so they are told apart
#: by identity; an obstore-backed one by its obstore store's, so that zarr stores made
#: afresh around one obstore store (a store per open) share one client.
_made: dict[tuple[int, bool], tuple[weakref.ref[Any], Store]] = {}
# a weak reference's callback may run inside it; released in a forked child
_lock = fork_safe.rlock()


def aiozarr_store_for(zarr_store: Any) -> Store | None:
    """The aiozarr store that reads and writes `zarr_store`'s objects under the same
    keys, or None where the pipeline leaves the store to zarr-python."""
    wrapped = getattr(zarr_store, "aiozarr_store", None)
    if isinstance(wrapped, Store):  # aiozarr.zarr.Store: the store it wraps
        return wrapped
    anchor = _anchor(zarr_store)
    key = (id(anchor), bool(getattr(zarr_store, "read_only", False)))
    with _lock:
        entry = _made.get(key)
        if entry is not None and entry[0]() is anchor:
            return entry[1]
    store = _make(zarr_store)
    if store is None:
        return None
    with _lock:
        try:
            ref = weakref.ref(anchor, lambda _: _forget(key))
        except TypeError:  # cannot tell when it goes: made again next time
            return store
        _made[key] = (ref, store)
    return store


def _anchor(zarr_store: Any) -> Any:
    """What the aiozarr store of `zarr_store` reads: its obstore store, or itself."""
    from zarr.storage import ObjectStore

    return zarr_store.store if type(zarr_store) is ObjectStore else zarr_store


def _forget(key: tuple[int, bool]) -> None:
    if _made is None:  # type: ignore[comparison-overlap]  # the interpreter is exiting
        return
    with _lock:
        entry = _made.get(key)
        if entry is not None and entry[0]() is None:
            del _made[key]


def _make(zarr_store: Any) -> Store | None:
    """A new aiozarr store for `zarr_store`: aiozarr's own for the types it addresses
    directly (exact types only: a subclass may change how keys map to objects), the
    adapter over the zarr store's API for any other zarr store, None for anything else."""
    from zarr.storage import LocalStore, ObjectStore

    from aiozarr.storage.backends.zarr_store import ZarrStore, is_zarr_store

    read_only = bool(zarr_store.read_only)
    kind = type(zarr_store)
    if kind is LocalStore:
        from aiozarr.storage.backends.local import LocalStore as AiozarrLocalStore

        return AiozarrLocalStore(zarr_store.root, read_only=read_only)
    if kind is ObjectStore:
        from aiozarr.storage.backends.object_store import ObjectStore as AiozarrObjectStore

        return AiozarrObjectStore(zarr_store.store, read_only=read_only)
    if is_zarr_store(zarr_store):
        return ZarrStore(zarr_store, read_only=read_only)
    return None
