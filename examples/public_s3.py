"""Read a public dataset on S3 anonymously: no account, no credentials.

Needs the base install only: `pip install -e .` in a checkout of aiozarr (it is not
on the package index yet; `pip wheel --no-deps .` builds a wheel to install elsewhere).

    python examples/public_s3.py            # the real MUR SST dataset (AWS Open Data)
    python examples/public_s3.py --local    # the same code on a small local copy

The Multi-scale Ultra-high Resolution (MUR) sea surface temperature analysis is a
public Zarr v2 store on AWS (`s3://mur-sst/zarr-v1`, us-west-2, consolidated metadata;
analysed_sst is (time, lat, lon) int16 with scale_factor / add_offset). aiozarr signs
nothing when no credentials are given, so opening it needs only the region. `--local`
writes a small look-alike to the bundled emulator and runs the very same `read`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from typing import Any

import numpy as np

import aiozarr
from aiozarr.emulator import Emulator

PUBLIC_URL = "s3://mur-sst/zarr-v1"
PUBLIC_OPTIONS = {"region": "us-west-2"}  # anonymous: no credentials given


async def read(url: str, options: dict[str, Any]) -> None:
    """Open the group, describe analysed_sst, read a 10 x 10 patch near Monterey Bay."""
    started = time.perf_counter()
    group = await aiozarr.open_group_async(url, mode="r", storage_options=options)
    sst = await group.getitem("analysed_sst")
    print(f"{url}: analysed_sst {sst.shape} {sst.dtype}, chunks {sst.chunks}")
    attrs = sst.attrs
    scale, offset = attrs.get("scale_factor", 1.0), attrs.get("add_offset", 0.0)
    lat0 = int((36.6 + 89.99) * 100) % sst.shape[1]  # 0.01 degree grid from -89.99
    lon0 = int((-122.0 + 179.99) * 100) % sst.shape[2]
    raw = await sst.getitem((0, slice(lat0, lat0 + 10), slice(lon0, lon0 + 10)))
    kelvin = np.asarray(raw, dtype="f8") * scale + offset
    print(
        f"patch at index ({lat0}, {lon0}): mean {kelvin.mean() - 273.15:.2f} °C "
        f"({time.perf_counter() - started:.2f} s)"
    )


async def local_copy(emulator: Emulator) -> str:
    """A small look-alike of the public store on the emulator; returns its URL."""
    url = emulator.s3_url("mur-sst/zarr-v1")
    options = emulator.storage_options()
    group = await aiozarr.open_group_async(url, mode="w", zarr_format=2, storage_options=options)
    shape = (2, 17999, 36000)
    sst = await group.create_array(
        "analysed_sst",
        shape=shape,
        dtype="i2",
        chunks=(1, 1799, 3600),
        zarr_format=2,
        fill_value=-32768,
        attributes={"scale_factor": 0.001, "add_offset": 298.15, "units": "kelvin"},
    )
    lat0, lon0 = 12659, 5799
    patch = np.full((10, 10), -12000, dtype="i2")  # 286.15 K = 13 °C
    await sst.setitem((0, slice(lat0, lat0 + 10), slice(lon0, lon0 + 10)), patch)
    from aiozarr.tools.consolidate import consolidate_metadata_async

    await consolidate_metadata_async(url, storage_options=options)
    return url


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--local", action="store_true", help="serve a small copy from the emulator instead of AWS"
    )
    args = parser.parse_args()
    if not args.local:
        await read(PUBLIC_URL, PUBLIC_OPTIONS)
        return
    with tempfile.TemporaryDirectory(prefix="aiozarr-") as root:
        async with Emulator(root) as emulator:
            url = await local_copy(emulator)
            await read(url, emulator.storage_options())


if __name__ == "__main__":
    asyncio.run(main())
