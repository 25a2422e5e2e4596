"""A server that ignores `Range` costs one whole read of a value per batch, not one per range.

Such a server answers every range GET with the whole value (200). Read range by range,
33 ranges of a 64 MiB shard moved 2.1 GB while `stats()` said 67 MB. The store now
remembers (in its runtime) that its server ignores ranges and reads a value whole once
for all the ranges of a batch, sliced, and `stats()["bytes_read"]` counts what moved.
The proxy (proxies.py) on 127.0.0.1 drops the `Range` header before the emulator.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from obstore.store import HTTPStore, S3Store
from tests.reliability.proxies import Proxy
from tests.servers import unique_prefix

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import RangeRequest

SIZE = 4 << 20
# 16 ranges of 64 KiB, 256 KiB apart: too far apart to coalesce, 16 requests.
RANGES = [ByteRange.of(i * (256 << 10), 64 << 10) for i in range(16)]


def _store(emulator: Emulator, endpoint: str, prefix: str, kind: str = "s3") -> ObjectStore:
    if kind == "http":  # obstore's HTTP store: its own words for a range ignored
        url = f"{endpoint}/{emulator.bucket}/{prefix}"
        return ObjectStore(HTTPStore(url, client_options={"allow_http": True}), read_only=True)
    options = {**emulator.storage_options(), "endpoint": endpoint}
    return ObjectStore(S3Store(emulator.bucket, prefix=prefix, **options))


def _whole_gets(proxy: Proxy) -> int:
    return sum(1 for method, _, ranged in proxy.sent if method == "GET" and not ranged)


def _expected(value: bytes) -> list[bytes]:
    return [value[r.offset : r.offset + (r.length or 0)] for r in RANGES]


@pytest.mark.parametrize("kind", ["s3", "http"])
async def test_ranges_of_one_value_move_it_once(emulator: Emulator, kind: str) -> None:
    prefix = unique_prefix()
    value = os.urandom(SIZE)
    direct = _store(emulator, emulator.endpoint, prefix)
    await direct.set("big", value)
    await direct.set("empty", b"")
    requests = [RangeRequest("big", r) for r in RANGES]
    with Proxy(emulator.endpoint, ignore_range=True).running() as proxy:
        store = _store(emulator, proxy.endpoint, prefix, kind)
        # A whole answer for a range of an empty value (moto answers so) tells nothing.
        assert bytes(await store.get("empty", ByteRange.of(0, 10))) == b""
        proxy.reset_stats()
        store.reset_stats()

        # The first batch finds out: 16 ranges sent, each answered whole and refused
        # unread, then whole reads that overlap in time share one GET. No range is
        # answered before all 16 are sent, so the store cannot learn it in the middle of
        # sending them. One whole read serves them all, or two where a refusal reaches
        # the event loop only after the first whole read has ended (a loaded machine):
        # never one per range.
        proxy.hold(16)
        got = await store.get_partial_values(requests)
        assert [bytes(g) for g in got] == _expected(value)
        whole = _whole_gets(proxy)
        assert whole in (1, 2)
        assert len(proxy.sent) == 16 + whole
        assert store.stats()["bytes_read"] == whole * SIZE

        # Known now: one whole read for the batch, and the statistics say what moved.
        proxy.reset_stats()
        store.reset_stats()
        got = await store.get_partial_values(requests)
        assert [bytes(g) for g in got] == _expected(value)
        assert proxy.sent == [("GET", f"/{emulator.bucket}/{prefix}/big", False)]
        assert proxy.bytes_sent == SIZE
        assert store.stats()["requests"] == 1
        assert store.stats()["bytes_read"] == SIZE


def test_a_sharded_array_reads_its_shard_whole_once(emulator: Emulator) -> None:
    """Once the store knows, the 32 inner chunks of a shard are one whole read of it."""
    prefix = unique_prefix()
    values = np.random.default_rng(0).random((256, 128))
    direct = _store(emulator, emulator.endpoint, prefix)
    aiozarr.create_array(
        direct, shape=values.shape, dtype="f8", chunks=(32, 32), shards=(256, 128)
    )[...] = values
    shard = (emulator.root / prefix / "c" / "0" / "0").stat().st_size
    with Proxy(emulator.endpoint, ignore_range=True).running() as proxy:
        store = _store(emulator, proxy.endpoint, prefix)
        arr = aiozarr.open_array(store, mode="r")
        # One element: the shard's index is a suffix range, answered whole: found out.
        assert arr[0, 0] == values[0, 0]
        proxy.reset_stats()
        store.reset_stats()
        assert np.array_equal(arr[...], values)
        assert proxy.sent == [("GET", f"/{emulator.bucket}/{prefix}/c/0/0", False)]
        assert proxy.bytes_sent == shard
        assert store.stats()["bytes_read"] == shard


@pytest.mark.parametrize("recheck", [True, 0.0])
def test_a_cached_shard_is_revalidated_through_a_server_ignoring_ranges(
    emulator: Emulator, recheck: object
) -> None:
    """The conditional GET of a shard's index answered with the whole (changed) shard
    is read as a plain read of it is, not raised as the server's refusal."""
    prefix = unique_prefix()
    direct = _store(emulator, emulator.endpoint, prefix)
    old = np.arange(16, dtype="i4")
    aiozarr.create_array(direct, data=old, chunks=(4,), shards=(8,), compressors=None)
    with Proxy(emulator.endpoint, ignore_range=True).running() as proxy:
        arr = aiozarr.open_array(
            _store(emulator, proxy.endpoint, prefix), cache_bytes=1 << 20, cache_recheck=recheck
        )
        np.testing.assert_array_equal(arr[:], old)
        np.testing.assert_array_equal(arr[:], old)  # unchanged: revalidated
        aiozarr.open_array(direct, mode="r+")[4:12] = -1
        old[4:12] = -1
        np.testing.assert_array_equal(arr[:], old)
