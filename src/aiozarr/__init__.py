"""aiozarr: fast async reads and writes of Zarr arrays on cloud object stores.

import aiozarr
arr = aiozarr.open_array("s3://bucket/data.zarr", storage_options={"skip_signature": True})
arr[0, :10]                      # sync, works in notebooks
await arr.async_array.getitem((0, slice(0, 10)))   # async services
darr = aiozarr.to_dask(arr)      # dask (imported on first use)
"""

import logging
from typing import Any

from aiozarr import config, errors
from aiozarr.api import (
    Batch,
    batch,
    create_array,
    create_array_async,
    create_group,
    create_group_async,
    open,
    open_array,
    open_array_async,
    open_async,
    open_group,
    open_group_async,
    read_many,
    read_many_async,
)
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.group import AsyncGroup
from aiozarr.sync import Array, Group
from aiozarr.tools.consolidate import consolidate_metadata, consolidate_metadata_async
from aiozarr.tools.copying import copy, copy_async
from aiozarr.tools.migration import migrate, migrate_async

__version__ = "0.1.0"

# A library's log records go where the application's logging sends them; where it set up
# none, nowhere, instead of to stderr through logging's last-resort handler (a store that
# gave up was printed there once, then raised as the error).
logging.getLogger("aiozarr").addHandler(logging.NullHandler())

# dask is optional and heavy: these load `aiozarr.dask` (and dask) on first use
_FROM_DASK_MODULE = frozenset({"to_dask", "from_dask"})


def __getattr__(name: str) -> Any:
    if name in _FROM_DASK_MODULE:
        import aiozarr.dask

        return getattr(aiozarr.dask, name)
    raise AttributeError(f"module 'aiozarr' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_FROM_DASK_MODULE])


__all__ = [
    "Array",
    "AsyncArray",
    "AsyncGroup",
    "Batch",
    "Group",
    "batch",
    "config",
    "consolidate_metadata",
    "consolidate_metadata_async",
    "copy",
    "copy_async",
    "create_array",
    "create_array_async",
    "create_group",
    "create_group_async",
    "errors",
    "from_dask",
    "migrate",
    "migrate_async",
    "open",
    "open_array",
    "open_array_async",
    "open_async",
    "open_group",
    "open_group_async",
    "read_many",
    "read_many_async",
    "to_dask",
]
