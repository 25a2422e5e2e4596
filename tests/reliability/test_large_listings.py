"""Large directories list page by page.

- 25,000 keys in slow pages (each page 0.1 s, one page a 503, one page slower than the
  request timeout) list completely and in order, however long the listing takes in all:
  each page has its own timeout and retries and resumes after the last key received.
"""

from __future__ import annotations

import threading
import time

import anyio
import obstore.store
import pytest

from aiozarr import config
from aiozarr.storage.object_store import ObjectStore
from aiozarr.testing.emulator import Emulator

pytestmark = pytest.mark.timeout(120)

KEYS = 25_000
PAGES = KEYS // 1000


@pytest.fixture(scope="module")
def big_prefix(emulator_server: Emulator) -> str:
    """A prefix holding `big/k00000` ... `big/k24999`: empty files written straight into
    the emulator's folder (25,000 PUTs would take minutes)."""
    prefix = "large-listing"
    directory = emulator_server.root / prefix / "big"
    directory.mkdir(parents=True)
    for i in range(KEYS):
        (directory / f"k{i:05d}").touch()
    return prefix


def _store(emulator: Emulator, prefix: str) -> ObjectStore:
    return ObjectStore(obstore.store.S3Store(emulator.bucket, prefix=prefix,
                                             **emulator.storage_options()))


def _faults_midway(emulator: Emulator, stop: threading.Event) -> threading.Thread:
    """After the 5th page a 503 on the next page; after the 12th, one page that trickles
    its body over 2.5 s (longer than the 1 s request timeout)."""

    def run() -> None:
        for after, kind in ((5, "status"), (12, "slow")):
            while not stop.is_set() and emulator.stats()["by_kind"].get("list", 0) < after:
                time.sleep(0.005)
            emulator.inject(kind, count=1, key_glob="", status=503, delay_s=2.5)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("how", ["list_dir", "list_prefix"])
def test_a_large_directory_lists_in_slow_pages_with_faults(
    emulator: Emulator, big_prefix: str, how: str
) -> None:
    store = _store(emulator, big_prefix)
    emulator.set_list_latency(100)  # 25 pages: 2.5 s in all, well past one timeout
    stop = threading.Event()
    faults = _faults_midway(emulator, stop)

    async def listing() -> list[str]:
        if how == "list_dir":
            return [name async for name in store.list_dir("big")]
        return [key.rpartition("/")[2] async for key in store.list_prefix("big/")]

    settings = {
        "request_timeout_s": 1.0,
        "request_timeout_min_bytes_per_s": float(1 << 40),  # the timeout is 1 s, flat
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
    assert store.budget.stats()["retries"] == 2
    assert store.budget.stats()["timeouts"] == 1
