"""What zarr-python's reads cost through `aiozarr.zarr.CodecPipeline`: a read over N
shards reads their indexes in one batch, then every inner chunk it needs in one batch of
coalesced ranges (one request per shard here); indexes are cached across reads; shards
needed whole are one request each. Counted by aiozarr's counting store under
`aiozarr.zarr.Store` (over the S3 emulator), and by the emulator itself under
zarr-python's obstore `ObjectStore`."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from tests.bridge.pipeline_helpers import Fallbacks, aiozarr_pipeline, obstore, zarr

from aiozarr.emulator import Emulator
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.opening.url import from_url
from aiozarr.zarr import Store

SHAPE = (40, 40)
DATA = np.arange(1600, dtype="float32").reshape(SHAPE)
#: 4 x 4 shards of 10 x 10, each 2 x 2 inner chunks of 5 x 5.
LAYOUT: dict[str, Any] = {"chunks": (5, 5), "shards": (10, 10), "dtype": "float32"}
#: A column slab through the first inner-chunk column of shard column 1: four shards,
#: two inner chunks (rows 0 and 1 of the shard) of each.
SLAB = np.s_[3:37, 11:13]


def _on_emulator(emulator: Emulator) -> CountingStore:
    """A counting store over a new prefix of the emulator's bucket."""
    url = emulator.s3_url(f"requests-{uuid.uuid4().hex}")
    return CountingStore(from_url(url, storage_options=emulator.storage_options()))


def _counted(emulator: Emulator) -> tuple[Any, CountingStore]:
    counting = _on_emulator(emulator)
    store = Store(counting)
    arr = zarr.create_array(store=store, shape=SHAPE, **LAYOUT)
    arr[:] = DATA
    counting.reset()
    return store, counting


def _gets(counting: CountingStore) -> list[tuple[str, Any]]:
    return [(key, byte_range) for op, key, byte_range in counting.requests if op == "get"]


def test_a_slab_over_n_shards_is_one_round_of_indexes_then_one_of_ranges(
    emulator: Emulator, fallbacks: Fallbacks
) -> None:
    store, counting = _counted(emulator)
    with aiozarr_pipeline():
        arr = zarr.open_array(store)  # (read-only would be another store)
        counting.reset()
        np.testing.assert_array_equal(arr[SLAB], DATA[SLAB])
    shards = {f"c/{i}/1" for i in range(4)}
    gets = _gets(counting)
    indexes = [g for g in gets if g[1] is not None and g[1].suffix is not None]
    ranges = [g for g in gets if g not in indexes]
    assert {key for key, _ in indexes} == shards and len(indexes) == 4
    assert {key for key, _ in ranges} == shards
    assert len(ranges) == 4  # the two inner chunks of each shard: one coalesced range
    assert gets[:4] == indexes  # every index before any inner chunk
    # one batch of the four indexes, then one batch of the four ranges
    assert [len(batch) for batch in counting.batches] == [4, 8]
    assert fallbacks.reasons == []


def test_indexes_are_cached_across_reads(emulator: Emulator) -> None:
    store, counting = _counted(emulator)
    with aiozarr_pipeline():
        arr = zarr.open_array(store)
        arr[SLAB]
        counting.reset()
        np.testing.assert_array_equal(arr[SLAB], DATA[SLAB])
    gets = _gets(counting)
    assert len(gets) == 4
    assert all(byte_range is not None and byte_range.suffix is None for _, byte_range in gets)


def test_shards_needed_whole_are_one_request_each(emulator: Emulator) -> None:
    store, counting = _counted(emulator)
    with aiozarr_pipeline():
        arr = zarr.open_array(store)  # (read-only would be another store)
        counting.reset()
        np.testing.assert_array_equal(arr[10:30, :], DATA[10:30])
    gets = _gets(counting)
    assert len(gets) == 8  # 2 x 4 shards, index and chunks in one request
    assert all(byte_range is None for _, byte_range in gets)


def test_the_emulator_serves_a_slab_in_two_requests_per_shard(emulator: Emulator) -> None:
    s3 = obstore.store.S3Store(
        emulator.bucket, prefix=f"requests-{uuid.uuid4().hex}", **emulator.storage_options()
    )
    store = zarr.storage.ObjectStore(s3)
    zarr.create_array(store=store, shape=SHAPE, **LAYOUT)[:] = DATA
    with aiozarr_pipeline():
        arr = zarr.open_array(store, mode="r")
        emulator.reset_stats()
        np.testing.assert_array_equal(arr[SLAB], DATA[SLAB])
        cold = emulator.stats()["by_method"].get("GET", 0)
        emulator.reset_stats()
        np.testing.assert_array_equal(arr[SLAB], DATA[SLAB])
        warm = emulator.stats()["by_method"].get("GET", 0)
    assert (cold, warm) == (8, 4)


@pytest.mark.parametrize("kind", ["unsharded", "v2"])
def test_chunks_are_one_request_each(emulator: Emulator, kind: str) -> None:
    counting = _on_emulator(emulator)
    store = Store(counting)
    zarr_format = 2 if kind == "v2" else 3
    arr = zarr.create_array(
        store=store, shape=SHAPE, chunks=(10, 10), dtype="float32", zarr_format=zarr_format
    )
    arr[:] = DATA
    with aiozarr_pipeline():
        arr = zarr.open_array(store)  # (read-only would be another store)
        counting.reset()
        np.testing.assert_array_equal(arr[5:25, 5:15], DATA[5:25, 5:15])
    assert len(_gets(counting)) == 6  # 3 x 2 chunks
    assert [len(batch) for batch in counting.batches] == [6]
