"""A range answered with fewer bytes than its headers promise is read again.

A 206 whose body is 4 bytes short (its `Content-Range` still naming the range asked
for, or changed to match the shorter body) is a cut body, not a value that ends there:
it is a `ShortReadError`, retried like a reset, and the read returns the exact bytes. A
shard index read short was decoded as it came and raised a `CodecError`. The proxy
(proxies.py) on 127.0.0.1 cuts the next 206 answer short, once.
"""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest
from obstore.store import S3Store
from tests.reliability.proxies import Proxy
from tests.servers import unique_prefix

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import RangeRequest

VALUE = os.urandom(1000)
RANGES = {
    "suffix": (ByteRange.last(100), slice(900, 1000)),  # a shard index
    "offset": (ByteRange.from_offset(900), slice(900, 1000)),
    "bounded": (ByteRange.of(100, 100), slice(100, 200)),
}


def _store(emulator: Emulator, endpoint: str, prefix: str) -> ObjectStore:
    options = {**emulator.storage_options(), "endpoint": endpoint}
    return ObjectStore(S3Store(emulator.bucket, prefix=prefix, **options))


# A bounded range whose Content-Range still names the range asked for was already told
# apart from a clipped one (and retried): every other way of answering short was not.
@pytest.mark.parametrize(
    ("kind", "relabel"),
    [("suffix", False), ("suffix", True), ("offset", False), ("offset", True), ("bounded", True)],
)
async def test_a_range_answered_short_is_read_again(
    emulator: Emulator, kind: str, relabel: bool
) -> None:
    prefix = unique_prefix()
    await _store(emulator, emulator.endpoint, prefix).set("k", VALUE)
    byte_range, expected = RANGES[kind]
    with Proxy(emulator.endpoint, short_ranges=1, relabel=relabel).running() as proxy:
        store = _store(emulator, proxy.endpoint, prefix)
        [data] = await store.get_partial_values([RangeRequest("k", byte_range)])
        assert proxy.shortened == 1
    assert bytes(data) == VALUE[expected]
    assert store.stats()["retries"] == 1
    assert store.stats()["reads"] == 1  # the second try; the first failed


@pytest.mark.parametrize("relabel", [False, True])
def test_a_shard_index_read_short_is_read_again(emulator: Emulator, relabel: bool) -> None:
    prefix = unique_prefix()
    values = np.arange(64, dtype="f8")
    direct = _store(emulator, emulator.endpoint, prefix)
    aiozarr.create_array(direct, shape=(64,), dtype="f8", chunks=(8,), shards=(64,))[:] = values
    with Proxy(emulator.endpoint, short_ranges=1, relabel=relabel).running() as proxy:
        store = _store(emulator, proxy.endpoint, prefix)
        arr = aiozarr.open_array(store, mode="r")  # metadata: a whole GET (200), not cut
        # One inner chunk: the shard's index (a suffix range, cut short), then its range.
        assert arr[9:11].tolist() == [9.0, 10.0]
        assert proxy.shortened == 1
    assert store.stats()["retries"] == 1


def test_a_range_always_answered_short_gives_up_naming_the_key(emulator: Emulator) -> None:
    prefix = unique_prefix()
    asyncio.run(_store(emulator, emulator.endpoint, prefix).set("k", VALUE))
    with (
        aiozarr.config.set(retry_attempts=3, retry_base_delay_s=0.001),
        Proxy(emulator.endpoint, short_ranges=100).running() as proxy,
    ):
        store = _store(emulator, proxy.endpoint, prefix)
        with pytest.raises(StoreError, match=r"'k'.*gave up after 3 attempts"):
            asyncio.run(store.get("k", ByteRange.last(100)))
        assert proxy.shortened == 3


@pytest.mark.parametrize("kind", ["suffix", "offset", "bounded"])
async def test_a_revalidation_answered_short_is_read_again(emulator: Emulator, kind: str) -> None:
    # A cached value's conditional GET (If-None-Match) finds it changed: the new bytes,
    # cut 4 short under a Content-Range naming the whole range, were taken as the value
    # (a shard index revalidated so was then decoded as it came).
    prefix = unique_prefix()
    direct = _store(emulator, emulator.endpoint, prefix)
    await direct.set("k", VALUE)
    _, version = await direct.get_versioned("k")
    new = os.urandom(1000)
    await direct.set("k", new)
    byte_range, expected = RANGES[kind]
    with Proxy(emulator.endpoint, short_ranges=1).running() as proxy:
        store = _store(emulator, proxy.endpoint, prefix)
        answer = await store.get_if_changed("k", byte_range, version)
        assert proxy.shortened == 1
    assert isinstance(answer, tuple)
    assert bytes(answer[0]) == new[expected]
    assert store.stats()["retries"] == 1
