"""A conditional write that landed but whose answer was lost (the connection dropped
after the server wrote it) is retried; the retry's refusal (412: the value is no longer
the version the write expected, or it exists) is then the write's own doing, not
another writer's. Taken as a conflict, an append grew the array twice (its update
applied again to the document it had written) and a create said another writer had
created the node."""

from __future__ import annotations

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_an_append_whose_answer_was_lost_grows_the_array_once(
    emulator: Emulator, zarr_format: int
) -> None:
    name, document = f"a{zarr_format}.zarr", "zarr.json" if zarr_format == 3 else ".zarray"
    url = emulator.s3_url(name)
    options = emulator.storage_options()
    with config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        arr = await aiozarr.create_array_async(
            url,
            shape=(4,),
            dtype="i4",
            chunks=(4,),
            fill_value=-1,
            zarr_format=zarr_format,
            storage_options=options,
        )
        await arr.setitem(..., np.arange(4, dtype="i4"))
        emulator.inject("lost", count=1, key_glob=f"{name}/{document}", methods=["PUT"])
        await arr.append(np.array([10, 11, 12], dtype="i4"))
    assert not emulator.faults()  # the answer was lost
    again = await aiozarr.open_array_async(url, mode="r", storage_options=options)
    assert again.shape == (7,)
    assert (await again.getitem(...)).tolist() == [0, 1, 2, 3, 10, 11, 12]


async def test_a_create_whose_answer_was_lost_creates_the_array(emulator: Emulator) -> None:
    url, options = emulator.s3_url("c.zarr"), emulator.storage_options()
    emulator.inject("lost", count=1, key_glob="c.zarr/zarr.json", methods=["PUT"])
    with config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        arr = await aiozarr.create_array_async(
            url, shape=(4,), dtype="i4", chunks=(2,), storage_options=options
        )
    assert not emulator.faults()
    assert (await aiozarr.open_array_async(url, mode="r", storage_options=options)).shape == (4,)
    assert arr.shape == (4,)
