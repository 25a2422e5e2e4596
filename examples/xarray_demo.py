"""xarray on aiozarr, notebook style, with no cloud account.

Starts the object-store emulator on 127.0.0.1 (20 ms per request), writes a CF-encoded
dataset with `aiozarr.xarray.to_zarr`, opens it lazily with `engine=AiozarrBackendEntrypoint`
(`engine="aiozarr"` once aiozarr is installed), loads four variables concurrently with
`load_async`, and checks that xarray + zarr-python read the same dataset.

Needs the `xarray` extra: `pip install -e ".[xarray]"` in a checkout of aiozarr (it is not
on the package index yet; `pip wheel --no-deps .` builds a wheel to install elsewhere).
With zarr-python installed too, it also checks that xarray's own zarr engine reads the same.

    python examples/xarray_demo.py [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from aiozarr.emulator import Emulator
from aiozarr.xarray import AiozarrBackendEntrypoint, to_zarr


def make_dataset() -> xr.Dataset:
    """Eight variables on a (time, lat, lon) grid, with CF times and int16 packing."""
    rng = np.random.default_rng(42)
    coords = {
        "time": pd.date_range("2024-01-01", periods=24, freq="h"),
        "lat": np.linspace(-60, 60, 90),
        "lon": np.linspace(0, 359, 180),
    }
    shape = tuple(len(v) for v in coords.values())
    data = {
        f"var{i}": (("time", "lat", "lon"), rng.integers(0, 400, shape) * 0.25, {"units": "K"})
        for i in range(8)
    }
    ds = xr.Dataset(data, coords=coords, attrs={"title": "aiozarr xarray demo"})
    ds.var0.encoding = {"dtype": "int16", "scale_factor": 0.25, "_FillValue": -1}
    return ds


async def main(latency_ms: float) -> None:
    ds = make_dataset()
    with tempfile.TemporaryDirectory() as root, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns about v3 consolidated metadata
        async with Emulator(root, latency_ms=latency_ms) as emu:
            url, options = emu.s3_url("demo.zarr"), emu.storage_options()

            # 1. write: v3 with dimension_names, shards of 6 hours, consolidated metadata
            encoding = {n: {"chunks": (1, 90, 180), "shards": (6, 90, 180)} for n in ds.data_vars}
            await asyncio.to_thread(to_zarr, ds, url, encoding=encoding, storage_options=options)

            # 2. open: metadata + the 3 index coordinates, nothing else
            emu.reset_stats()
            start = time.perf_counter()
            lazy = await asyncio.to_thread(
                xr.open_dataset, url, engine=AiozarrBackendEntrypoint, storage_options=options
            )
            print(
                f"open_dataset: {emu.stats()['requests']} requests, "
                f"{(time.perf_counter() - start) * 1e3:.0f} ms"
            )

            # 3. load four variables concurrently on this event loop: one batch of requests
            emu.reset_stats()
            start = time.perf_counter()
            subset = (
                await lazy[["var0", "var1", "var2", "var3"]].isel(time=slice(0, 6)).load_async()
            )
            stats = emu.stats()
            print(
                f"load_async of 4 variables: {stats['requests']} requests, "
                f"peak {stats['peak_inflight']} in flight, "
                f"{(time.perf_counter() - start) * 1e3:.0f} ms"
            )
            print(subset.var0.mean().item(), "K mean of var0 over the first 6 hours")

            # 4. the same dataset through xarray's own zarr engine (zarr-python), when it is
            # installed. Blocking calls go to a thread: this loop also serves the emulator.
            ours = await lazy.load_async()
            if importlib.util.find_spec("zarr") is not None:
                reference = await asyncio.to_thread(
                    lambda: xr.open_zarr(emu.root / "demo.zarr").load()
                )
                print("same as xarray's zarr engine:", ours.identical(reference))
            print("identical:", ours.identical(ds))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    asyncio.run(main(parser.parse_args().latency_ms))
