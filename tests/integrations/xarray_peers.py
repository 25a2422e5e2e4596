"""xarray's own zarr engine, as the xarray tests compare against it: writing and reading
with its warnings (zarr v3 consolidated metadata, ...) silenced."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import xarray as xr


def theirs(ds: xr.Dataset, where: Path, **kwargs: Any) -> Any:
    """`ds.to_zarr(where, **kwargs)`: xarray's writer."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ds.to_zarr(where, **kwargs)


def read(where: Path, engine: str = "zarr", **kwargs: Any) -> xr.Dataset:
    """What xarray reads with `engine`, loaded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(where, engine=engine, **kwargs).load()
