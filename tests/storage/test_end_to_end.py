"""Arrays end to end on real S3 servers: moto, and data zarr-python wrote served by the emulator."""

from __future__ import annotations

from typing import Any

import numpy as np
import zarr
import zarr.codecs
from tests.servers import MOTO_BUCKET

import aiozarr
from aiozarr.emulator import Emulator


async def test_sharded_array_on_moto_s3(moto_server: str) -> None:
    options: dict[str, Any] = {
        "key": "testing",
        "secret": "testing",
        "endpoint_url": moto_server,
        "region_name": "us-east-1",
    }
    url = f"s3://{MOTO_BUCKET}/e2e/sharded.zarr"
    data = np.arange(40 * 36, dtype="f8").reshape(40, 36)
    arr = await aiozarr.create_array_async(
        url,
        shape=data.shape,
        dtype="f8",
        chunks=(5, 6),
        shards=(20, 18),
        storage_options=options,
        overwrite=True,
    )
    await arr.setitem(..., data)
    again = await aiozarr.open_array_async(url, storage_options=options, mode="r")
    assert again.shards == (20, 18)
    assert np.array_equal(await again.getitem(...), data)
    assert np.array_equal(await again.getitem((slice(3, 33), 7)), data[3:33, 7])


async def test_zarr_python_data_read_through_an_s3_url(emulator: Emulator) -> None:
    # zarr-python writes into the directory the emulator serves as its bucket.
    data = np.random.default_rng(3).normal(size=(30, 20)).astype("f4")
    z = zarr.create_array(
        store=str(emulator.root / "zp" / "data.zarr"),
        shape=data.shape,
        dtype="f4",
        chunks=(5, 5),
        shards=(10, 10),
        compressors=zarr.codecs.ZstdCodec(level=3),
    )
    z[...] = data
    zarr.open_group(str(emulator.root / "zp" / "v2.zarr"), mode="w", zarr_format=2).create_array(
        "x", shape=(7,), dtype="i2", chunks=(3,)
    )[...] = np.arange(7)

    options = emulator.storage_options()
    arr = await aiozarr.open_array_async(emulator.s3_url("zp/data.zarr"), storage_options=options)
    assert np.array_equal(await arr.getitem(...), data)
    group = await aiozarr.open_group_async(emulator.s3_url("zp/v2.zarr"), storage_options=options)
    x = await group.getitem("x")
    assert list(await x.getitem(...)) == list(range(7))
    emulator.reset_stats()
    await arr.getitem((4, 4))  # one inner chunk; index cached by the full read
    assert emulator.stats()["requests"] == 1
