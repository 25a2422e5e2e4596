"""xarray on aiozarr: the `engine="aiozarr"` backend and `to_zarr`.

    ds = xr.open_dataset("s3://bucket/data.zarr", engine="aiozarr", storage_options={...})
    await ds[["a", "b"]].load_async()          # one batch of requests for both
    aiozarr.xarray.load(ds[["a", "b"]])        # the same, blocking (ds.load(): one by one)
    aiozarr.xarray.store_of(ds).stats()        # requests, bytes, latencies so far
    aiozarr.xarray.to_zarr(ds, "s3://bucket/copy.zarr", storage_options={...})

Importing this package imports xarray (the `xarray` extra); `import aiozarr` does not.
"""

from aiozarr.errors import require_extra

require_extra("aiozarr.xarray", "xarray", "xarray")

# ruff: noqa: E402 (xarray is looked for first, to name the extra when it is missing)
from aiozarr.xarray.backend import AiozarrBackendEntrypoint
from aiozarr.xarray.lazy_array import AiozarrBackendArray
from aiozarr.xarray.read_together import load
from aiozarr.xarray.variables import store_of
from aiozarr.xarray.writer import consolidate_async, to_zarr, to_zarr_async

__all__ = [
    "AiozarrBackendArray",
    "AiozarrBackendEntrypoint",
    "consolidate_async",
    "load",
    "store_of",
    "to_zarr",
    "to_zarr_async",
]
