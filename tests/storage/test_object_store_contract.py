"""`ObjectStore` on the emulator (S3 and plain HTTP) and on moto's S3 server.

The shared `StoreContract` runs on all three; the tests below it cover what is
particular to object stores: multipart uploads, paging, pickling, request counts.
"""

from __future__ import annotations

import itertools
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from obstore.store import S3Store
from tests.reliability.proxies import Proxy
from tests.servers import FAST_RETRY, unique_prefix

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import ReadOnlyError
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import RangeRequest, Store
from aiozarr.testing.store_contract import StoreContract

DATA = bytes(range(256)) * 4  # 1 KiB


class TestEmulatorS3(StoreContract):
    @pytest.fixture
    def store(self, emulator_s3_store: Callable[..., ObjectStore]) -> Store:
        return emulator_s3_store()


class TestMotoS3(StoreContract):
    @pytest.fixture
    def store(self, moto_store: Callable[..., ObjectStore]) -> Store:
        return moto_store()


class TestEmulatorHTTP(StoreContract):
    """Plain HTTP: read-only, no listing; test data is written into the served folder."""

    writable = False
    listable = False
    supports_delete_prefix = False

    @pytest.fixture
    def store(self, emulator_http_store: Callable[[], tuple[ObjectStore, Path]]) -> Store:
        store, self.directory = emulator_http_store()
        return store

    async def set_raw(self, store: Store, key: str, value: bytes) -> None:
        path = self.directory / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value)
        # Modified long ago (each write at its own time): a plain HTTP answer modified
        # within a minute of now is no version (docs/decisions/storage.md).
        stamp = next(_STAMPS)
        os.utime(path, ns=(stamp, stamp))


_STAMPS = itertools.count(1_000_000_000 * 10**9, 1_000)  # 2001, a microsecond apart


async def test_large_values_go_up_in_parallel_parts(emulator: Emulator) -> None:
    big = np.random.default_rng(0).integers(0, 255, 12 << 20, dtype="u1")
    with Proxy(emulator.endpoint).running() as proxy:
        options = {**emulator.storage_options(), "endpoint": proxy.endpoint}
        store = ObjectStore(
            S3Store(emulator.bucket, prefix=unique_prefix(), retry_config=FAST_RETRY, **options)
        )
        with config.set(max_request_bytes=16 << 20):
            await store.set("one", big)  # within the part size: a single PUT
        assert emulator.stats()["by_kind"].get("upload_part", 0) == 0
        # 3 parts of 5 MiB (S3's least), all at once: held until all 3 have been sent,
        # however slowly the machine runs.
        proxy.hold(3, method="PUT")
        emulator.set_network(bandwidth_mbps=40)  # each upload connection: 40 MB/s
        with config.set(max_request_bytes=5 << 20, parts_per_object=3):
            await store.set("big", big)
        assert emulator.stats()["by_kind"]["upload_part"] == 3
        assert emulator.stats()["peak_inflight"] <= 3
        for key in ("one", "big"):
            got = await store.get(key, ByteRange.of(3 << 20, 64))
            assert bytes(got) == big[3 << 20 :][:64].tobytes()


async def test_a_value_under_s3s_least_part_goes_up_in_one_put(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    # Past a 1 MiB part size but under 5 MiB: a multipart upload would be one part.
    store = emulator_s3_store()
    value = bytes(range(256)) * (16 << 10)  # 4 MiB
    with config.set(max_request_bytes=1 << 20):
        await store.set("v", value)
    assert emulator.stats()["by_kind"].get("upload_part", 0) == 0
    assert emulator.stats()["by_method"]["PUT"] == 1
    assert bytes(await store.get("v")) == value


async def test_listing_past_one_page(emulator_s3_store: Callable[..., ObjectStore]) -> None:
    store = emulator_s3_store()
    await store.set_many((f"k/{i:04d}", b"") for i in range(1100))  # obstore pages at 1000
    assert len([k async for k in store.list_prefix("k/")]) == 1100


async def test_repr_pickle_and_equality(moto_store: Callable[..., ObjectStore]) -> None:
    store = moto_store(prefix="pickled")
    await store.set("k", b"v")
    text = repr(store)
    assert "s3://aiozarr-test/pickled" in text and "testing" not in text  # no credentials
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store and hash(clone) == hash(store)
    assert bytes(await clone.get("k")) == b"v"
    assert clone != store.with_read_only()


async def test_answers_are_not_copied(emulator_s3_store: Callable[..., ObjectStore]) -> None:
    store = emulator_s3_store()
    await store.set("k", DATA)
    whole = await store.get("k")
    assert not isinstance(whole, bytes | bytearray)  # obstore's Bytes, handed on as is
    assert memoryview(whole).readonly


# -- request counts ----------------------------------------------------------------------


async def test_one_request_per_coalesced_range(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    store = emulator_s3_store()
    blob = bytes(3 << 20)
    await store.set_many([("a", blob), ("b", blob)])
    emulator.reset_stats()
    requests = [
        RangeRequest("a", ByteRange.of(0, 100)),
        RangeRequest("a", ByteRange.of(200, 100)),  # near the first: merged
        RangeRequest("a", ByteRange.of(5 << 19, 100)),  # 2.5 MiB away: its own request
        RangeRequest("a", ByteRange.last(64)),  # suffix: its own request
        RangeRequest("b", ByteRange.of(10, 10)),
        RangeRequest("missing", ByteRange.of(0, 10)),
    ]
    got = await store.get_partial_values(requests)
    assert [None if g is None else len(g) for g in got] == [100, 100, 100, 64, 10, None]
    stats = emulator.stats()
    assert stats["by_kind"] == {"get_range": 5}
    assert stats["by_status"] == {"206": 4, "404": 1}


async def test_counts_agree_with_counting_store(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    counting = pytest.importorskip("aiozarr.storage.backends.counting")
    store = emulator_s3_store()
    await store.set("k", bytes(4 << 20))
    wrapped = counting.CountingStore(store)
    emulator.reset_stats()
    offsets = [0, 1000, 2 << 20, (2 << 20) + 50, (4 << 20) - 100]
    await wrapped.get_partial_values([RangeRequest("k", ByteRange.of(o, 10)) for o in offsets])
    assert emulator.stats()["by_kind"] == {"get_range": 3}
    assert wrapped.counts["get"] == emulator.stats()["requests"] == 3


# -- plain HTTP (read-only) --------------------------------------------------------------


async def test_http_store_reads(
    emulator: Emulator, emulator_http_store: Callable[[], tuple[ObjectStore, Path]]
) -> None:
    store, directory = emulator_http_store()
    (directory / "g" / "c").mkdir(parents=True)
    (directory / "g" / "zarr.json").write_bytes(b"{}")
    (directory / "g" / "c" / "0").write_bytes(DATA)
    assert store.read_only and not store.listable
    assert bytes(await store.get("g/zarr.json")) == b"{}"
    assert bytes(await store.get("g/c/0", ByteRange.of(3, 5))) == DATA[3:8]
    assert bytes(await store.get("g/c/0", ByteRange.last(4))) == DATA[-4:]
    assert bytes(await store.get("g/c/0", ByteRange.from_offset(1000))) == DATA[1000:]
    assert await store.get("g/c/1") is None
    assert await store.exists("g/c/0") and not await store.exists("g/c/1")
    got = await store.get_partial_values(
        [
            RangeRequest("g/c/0", ByteRange.of(0, 2)),
            RangeRequest("g/c/0", ByteRange.last(2)),
            RangeRequest("g/nope"),
        ]
    )
    assert [None if g is None else bytes(g) for g in got] == [DATA[:2], DATA[-2:], None]
    with pytest.raises(ReadOnlyError):
        await store.set("g/c/1", b"x")
    assert "http://127.0.0.1" in repr(store)
    assert emulator.stats()["by_method"].get("PUT") is None
