"""Large directories list page by page, and a group's members are told apart in one batch.

- 25,000 keys in slow pages (each page 0.2 s, one page a 503, one page slower than the
  request timeout) list completely and in order, however long the listing takes in all:
  each page has its own timeout and retries and resumes after the last key received.
- `member_names()` of a group with 10,000 stray entries costs one listing and one batch
  of metadata reads, not a request (or two) per listed name.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import obstore.store
import pytest

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore

pytestmark = pytest.mark.timeout(120)

KEYS = 25_000
PAGES = KEYS // 1000


@pytest.fixture(scope="module")
def big_prefix(emulator_server: Emulator) -> Iterator[str]:
    """A prefix holding `big/k00000` ... `big/k24999`: empty files written straight into
    the emulator's folder (25,000 PUTs would take minutes); removed afterwards, so the
    session's other tests never list them."""
    prefix = "large-listing"
    directory = emulator_server.root / prefix / "big"
    directory.mkdir(parents=True)
    for i in range(KEYS):
        (directory / f"k{i:05d}").touch()
    yield prefix
    shutil.rmtree(emulator_server.root / prefix)


def _store(emulator: Emulator, prefix: str) -> ObjectStore:
    return ObjectStore(
        obstore.store.S3Store(emulator.bucket, prefix=prefix, **emulator.storage_options())
    )


def _faults_midway(emulator: Emulator, stop: threading.Event) -> threading.Thread:
    """After the 5th page a 503 on the next page; after the 12th, one page that trickles
    its body over 12 s (four times the 3 s request timeout)."""

    def run() -> None:
        for after, kind in ((5, "status"), (12, "slow")):
            while not stop.is_set() and emulator.stats()["by_kind"].get("list", 0) < after:
                time.sleep(0.005)
            emulator.inject(kind, count=1, key_glob="", status=503, delay_s=12.0)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("how", ["list_dir", "list_prefix"])
def test_a_large_directory_lists_in_slow_pages_with_faults(
    emulator: Emulator, big_prefix: str, how: str
) -> None:
    store = _store(emulator, big_prefix)
    store.reset_stats()  # an equal store of the other case may still share its runtime
    # 25 pages: 5 s in all, past one timeout. The timeout is 15 times a page's latency, so
    # that only the page held back times out, however busy the machine (at 1 s, a page
    # answered late under load timed out too, and was asked for once more)
    emulator.set_list_latency(200)
    stop = threading.Event()
    faults = _faults_midway(emulator, stop)

    async def listing() -> list[str]:
        if how == "list_dir":
            return [name async for name in store.list_dir("big")]
        return [key.rpartition("/")[2] async for key in store.list_prefix("big/")]

    settings = {
        "request_timeout_s": 3.0,
        "request_timeout_min_bytes_per_s": float(1 << 40),  # the timeout is 3 s, flat
        "retry_base_delay_s": 0.01,
        "retry_max_delay_s": 0.05,
    }
    began = time.monotonic()
    try:
        with config.set(**settings):
            names = anyio.run(listing)
    finally:
        stop.set()
        faults.join()
    took = time.monotonic() - began

    assert names == [f"k{i:05d}" for i in range(KEYS)]  # complete, in order, once each
    assert took > 2 * settings["request_timeout_s"]  # no single timeout bounds a listing
    stats = emulator.stats()
    # Every page once, plus the failed and the timed-out page asked for again after the
    # last key received: a listing that started over would ask for 25 pages more.
    assert stats["by_kind"]["list"] == PAGES + 2
    assert stats["by_status"].get("503") == 1
    assert store.stats()["retries"] == 2
    assert store.stats()["timeouts"] == 1


def _junk_group(store: object, zarr_format: int) -> None:
    root = aiozarr.open_group(store, mode="w", zarr_format=zarr_format)
    root.create_array("a", shape=(2,), dtype="i4")[...] = np.arange(2)
    root.create_group("g")


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_member_names_among_10000_stray_keys_is_one_listing_and_one_batch(
    tmp_path: Path, kind: str
) -> None:
    """v3: 10,000 keys beside the members (files are never nodes: not read at all)."""
    inner = MemoryStore() if kind == "memory" else LocalStore(tmp_path / "g.zarr")
    _junk_group(inner, 3)

    async def junk() -> None:
        await inner.set_many([(f"junk{i:05d}", b"") for i in range(10_000)])

    anyio.run(junk)
    store = CountingStore(inner)
    group = aiozarr.open_group(store, mode="r")
    store.reset()
    assert group.member_names() == ["a", "g"]
    assert store.counts["list"] == 1
    assert len(store.batches) == 1
    assert sorted(r.key for r in store.batches[0]) == ["a/zarr.json", "g/zarr.json"]
    assert sum(store.counts.values()) == 1 + 2  # the listing and two reads


def test_v2_member_names_among_10000_stray_directories_is_one_batch() -> None:
    """v2: 10,000 directories that are not nodes (no .zarray / .zgroup) are all asked
    about in the one batch that finds the members."""
    inner = MemoryStore()
    _junk_group(inner, 2)

    async def junk() -> None:
        await inner.set_many([(f"junk{i:05d}/x", b"") for i in range(10_000)])

    anyio.run(junk)
    store = CountingStore(inner)
    group = aiozarr.open_group(store, mode="r")
    store.reset()
    assert group.member_names() == ["a", "g"]
    assert store.counts["list"] == 1
    assert len(store.batches) == 1
    assert len(store.batches[0]) == 4 * 10_002  # .zarray .zattrs .zgroup .zmetadata each


def test_implicit_groups_still_found_without_zarr_json() -> None:
    """A v3 directory without `zarr.json` but with keys below is an implicit group
    (`implicit_groups`): the listing says it is a directory, so no listing per name is
    needed to find it."""
    inner = MemoryStore()
    _junk_group(inner, 3)
    anyio.run(inner.set, "implicit/deeper/zarr.json", b'{"zarr_format": 3, "node_type": "group"}')
    store = CountingStore(inner)
    group = aiozarr.open_group(store, mode="r")
    store.reset()
    with aiozarr.config.set(implicit_groups=True):  # Zarr v3.0 has none: asked for
        assert group.member_names() == ["a", "g", "implicit"]
    assert store.counts["list"] == 1
    assert len(store.batches) == 1
