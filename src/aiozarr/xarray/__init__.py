"""xarray on aiozarr: the `engine="aiozarr"` backend and `to_zarr`.

    ds = xr.open_dataset("s3://bucket/data.zarr", engine="aiozarr", storage_options={...})
    await ds[["a", "b"]].load_async()          # one batch of requests for both
    aiozarr.xarray.store_of(ds).stats()        # requests, bytes, latencies so far
    aiozarr.xarray.to_zarr(ds, "s3://bucket/copy.zarr", storage_options={...})

Importing this package imports xarray; `import aiozarr` does not.
"""

from aiozarr.xarray.backend import AiozarrBackendEntrypoint
from aiozarr.xarray.lazy_array import AiozarrBackendArray
from aiozarr.xarray.variables import store_of
from aiozarr.xarray.writer import consolidate_async, to_zarr, to_zarr_async

__all__ = [
    "AiozarrBackendArray",
    "AiozarrBackendEntrypoint",
    "consolidate_async",
    "store_of",
    "to_zarr",
    "to_zarr_async",
]
