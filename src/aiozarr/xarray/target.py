"""What `engine="aiozarr"` opens: the store, the group's path in it, and (for an array)
the array, from whatever xarray users pass as `filename_or_obj`.

Besides URLs, paths and aiozarr's own stores, groups and arrays, that is what xarray's
zarr engine opens too: a zarr-python store (wrapped, `storage.ZarrStore`), one that says
it cannot hold consolidated metadata (icechunk's: opened without it, as xarray does), a
plain `dict` that zarr-python wrote into (read through zarr-python's `MemoryStore`), and
a directory whose name ends in `.zip` (zarr-python writes `data.zarr.zip` as one when
given that path), which is a directory, not an archive.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from aiozarr.api import resolve_store
from aiozarr.errors import AiozarrError
from aiozarr.nodes import hierarchy
from aiozarr.nodes.array import AsyncArray
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.zarr_store import ZarrStore, is_zarr_store
from aiozarr.storage.protocol import Store
from aiozarr.storage.references.reference_store import is_reference_source

__all__ = ["Target"]


class Target:
    """What to open: `store`, the group's `path` in it, the `array` when an array was
    given, and whether the store can hold consolidated metadata (`consolidates`)."""

    def __init__(
        self,
        filename_or_obj: Any,
        group: str | None,
        storage_options: Mapping[str, Any] | None,
    ) -> None:
        from aiozarr.nodes.group import AsyncGroup
        from aiozarr.sync import Array, Group

        obj = filename_or_obj
        obj = obj.async_group if isinstance(obj, Group) else obj
        obj = obj.async_array if isinstance(obj, Array) else obj
        self.array: AsyncArray | None = None
        self.consolidates = _consolidates(obj)
        if isinstance(obj, AsyncGroup):
            self.store = obj.store
            self.path = hierarchy.normalize_path(hierarchy.join(obj.path, group or ""))
        elif isinstance(obj, AsyncArray):
            if group or not obj.path:
                raise AiozarrError(
                    "an array opens as a dataset of itself and its dimension coordinates, "
                    "which live in its parent group: pass an array below the store's root, "
                    "without group="
                )
            self.store, self.array = obj.store, obj
            self.path = obj.path.rpartition("/")[0]
        elif hasattr(obj, "store") and hasattr(obj, "path"):
            raise AiozarrError(
                f"the aiozarr engine opens a URL, a path, a Store, or an aiozarr Group or "
                f"Array, not a {type(obj).__name__}"
            )
        else:
            self.store = _store(obj, storage_options)
            self.path = hierarchy.normalize_path(group or "")


def _consolidates(obj: Any) -> bool:
    """Whether `obj` can hold consolidated metadata: zarr-python's stores say so with
    `supports_consolidated_metadata` (False for icechunk's), wrapped or not."""
    inner = obj.zarr_store if isinstance(obj, ZarrStore) else obj
    return bool(getattr(inner, "supports_consolidated_metadata", True))


def _store(obj: Any, storage_options: Mapping[str, Any] | None) -> Store:
    if isinstance(obj, Store):  # the backend only reads: `store_of(ds)` is the caller's store
        return obj
    if isinstance(obj, MutableMapping) and not is_reference_source(obj):
        return _dict_store(obj)
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    if isinstance(obj, str) and obj.rstrip("/").endswith(".zip") and os.path.isdir(obj):
        return LocalStore(obj, read_only=True)  # a directory, whatever its name says
    return resolve_store(obj, mode="r", storage_options=storage_options)


def _dict_store(mapping: MutableMapping[str, Any]) -> Store:
    """A plain `dict` that `Dataset.to_zarr(store={})` wrote into: its values are
    zarr-python's buffers, read through zarr-python's `MemoryStore` over the same dict."""
    try:
        from zarr.storage import MemoryStore
    except ImportError:
        raise AiozarrError(
            "a dict opens as the store zarr-python wrote into, which needs zarr-python "
            "(pip install zarr); or pass an aiozarr MemoryStore"
        ) from None
    store = MemoryStore(mapping, read_only=True)
    assert is_zarr_store(store)
    return ZarrStore(store, read_only=True)
