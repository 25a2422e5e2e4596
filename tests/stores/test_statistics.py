"""A store's request statistics: counters and latencies kept apart from its request budget."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.policy.budget import RequestBudget
from aiozarr.storage.policy.statistics import EVENTS, RequestStats

BUDGET_KEYS = ["limit", "maximum", "lowest_limit", "inflight", "peak_inflight", "waiting"]
LATENCY_KEYS = ["latency_p50_ms", "latency_p95_ms", "latency_p99_ms"]


# -- the statistics alone ------------------------------------------------------------------


def test_counts_from_many_threads_add_up_exactly() -> None:
    statistics = RequestStats()
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        for _ in range(5000):
            statistics.count("requests")
            statistics.count("bytes_read", 3)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    counts = statistics.counts()
    assert counts["requests"] == 8 * 5000
    assert counts["bytes_read"] == 3 * 8 * 5000


def test_every_event_is_reported_before_it_happens() -> None:
    statistics = RequestStats()
    statistics.count("something_else", 2)
    snapshot = statistics.snapshot()
    assert list(snapshot) == [*EVENTS, "something_else", *LATENCY_KEYS]
    assert all(snapshot[event] == 0 for event in EVENTS)
    assert snapshot["something_else"] == 2
    assert all(snapshot[key] is None for key in LATENCY_KEYS)


def test_reset_zeroes_counters_and_forgets_latencies() -> None:
    statistics = RequestStats()
    statistics.count("retries", 4)
    for _ in range(20):
        statistics.latencies.add(1024, 0.01)
        statistics.first_bytes.add(None, 0.005)
    assert statistics.latencies.p95(1024) is not None
    assert statistics.first_bytes.median(None) == 0.005
    assert statistics.snapshot()["latency_p50_ms"] == 10.0
    statistics.reset()
    assert statistics.counts() == dict.fromkeys(EVENTS, 0)
    assert statistics.latencies.p95(1024) is None
    assert statistics.first_bytes.median(None) is None
    assert statistics.snapshot()["latency_p50_ms"] is None


def test_statistics_pickle_as_fresh_ones() -> None:
    statistics = RequestStats()
    statistics.count("reads")
    statistics.latencies.add(10, 0.5)
    copy = pickle.loads(pickle.dumps(statistics))
    assert copy.counts() == dict.fromkeys(EVENTS, 0)
    assert copy.snapshot()["latency_p50_ms"] is None


async def test_the_budget_keeps_no_event_counters() -> None:
    budget = RequestBudget(4)
    async with budget as slot:
        budget.throttled(slot)
    assert list(budget.stats()) == BUDGET_KEYS
    assert budget.stats()["lowest_limit"] == 2
    budget.reset_peaks()
    assert budget.stats()["lowest_limit"] == budget.limit == 2
    assert budget.stats()["peak_inflight"] == 0


# -- on a store ----------------------------------------------------------------------------


async def test_store_stats_keys_are_the_budgets_then_the_statistics(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    assert list(store.stats()) == [*BUDGET_KEYS, *EVENTS, *LATENCY_KEYS]
    await store.set("k", b"12345")
    assert bytes(await store.get("k", ByteRange.of(1, 2))) == b"23"
    stats = store.stats()
    assert list(stats) == [*BUDGET_KEYS, *EVENTS, *LATENCY_KEYS]
    assert stats == {
        **store.budget.stats(),
        **store.runtime.statistics.snapshot(),
    }
    assert stats["reads"] == 1 and stats["bytes_read"] == 2


async def test_store_reset_stats_resets_the_statistics_and_the_peaks(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    await store.set("k", b"12345")
    await store.get("k")
    before = store.stats()
    assert before["reads"] == 1 and before["latency_p50_ms"] is not None
    assert before["peak_inflight"] == 1
    store.reset_stats()
    stats = store.stats()
    assert all(stats[event] == 0 for event in EVENTS)
    assert stats["peak_inflight"] == 0
    assert all(stats[key] is None for key in LATENCY_KEYS)


def test_equal_stores_share_one_statistics_object(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    same = LocalStore(tmp_path)
    copy = pickle.loads(pickle.dumps(store))
    assert same == store == copy
    assert same.runtime.statistics is store.runtime.statistics
    assert copy.runtime.statistics is store.runtime.statistics
    assert LocalStore(tmp_path / "other").runtime.statistics is not store.runtime.statistics
