"""The per-store request budget: one limit across threads and event loops, with AIMD."""

from __future__ import annotations

import asyncio
import threading

import anyio
import anyio.from_thread
import pytest
from obstore.store import S3Store
from tests.servers import FAST_RETRY, unique_prefix

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.policy.budget import RequestBudget, Slot
from aiozarr.storage.protocol import RangeRequest

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("fast_retries")]
RETRY_ATTEMPTS = 12  # throttling tests meet many 503s in a row

DATA = bytes(range(256)) * 64  # 16 KiB


# -- the budget alone ----------------------------------------------------------------------


async def test_halves_once_per_round_and_grows_back() -> None:
    budget = RequestBudget(16, recovery_successes=2)
    slots = [await budget.acquire() for _ in range(4)]
    for slot in slots:  # a burst of 503s on requests that started together: one cut
        budget.throttled(slot)
    assert budget.limit == 8
    fresh = await budget.acquire()  # started after the cut: may cut again
    budget.throttled(fresh)
    assert budget.limit == 4
    for _ in range(5):
        budget.release()
    for _ in range(2 * 12):
        budget.succeeded()
    assert budget.limit == 16
    budget.succeeded()
    assert budget.limit == 16  # never above the configured maximum
    assert budget.lowest_limit == 4


async def test_never_below_one() -> None:
    budget = RequestBudget(2)
    for _ in range(5):
        async with budget as slot:
            budget.throttled(slot)
    assert budget.limit == 1
    async with budget:  # one request can always run
        assert budget.inflight == 1


async def test_reentrant_within_a_task() -> None:
    budget = RequestBudget(1)
    async with budget, budget, budget:  # would deadlock if each took a slot
        assert budget.inflight == 1
    assert budget.inflight == 0


async def test_cancelled_waiter_leaks_no_slot() -> None:
    budget = RequestBudget(1)
    await budget.acquire()
    with anyio.move_on_after(0.05):
        await budget.acquire()  # waits, then is cancelled
    assert budget.stats()["waiting"] == 0
    budget.release()
    assert budget.inflight == 0
    async with budget:
        assert budget.inflight == 1


def test_one_limit_across_threads_and_loops() -> None:
    budget = RequestBudget(3)
    lock = threading.Lock()
    holding = 0
    most = 0

    async def work() -> None:
        nonlocal holding, most
        for _ in range(20):
            async with budget:
                with lock:
                    holding += 1
                    most = max(most, holding)
                await asyncio.sleep(0.001)
                with lock:
                    holding -= 1

    def loop() -> None:
        async def many() -> None:
            await asyncio.gather(*(work() for _ in range(4)))

        asyncio.run(many())

    threads = [threading.Thread(target=loop) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert most == 3  # the limit was reached and never passed
    assert budget.peak_inflight == 3
    assert budget.inflight == 0


# -- on a store ----------------------------------------------------------------------------


async def test_a_slot_of_the_store_budget_nests_within_a_task() -> None:
    store = MemoryStore(max_concurrency=2)
    async with store.budget:
        await store.set("k", b"x")  # a request made while holding the slot
        assert bytes(await store.get("k")) == b"x"
    assert store.budget.inflight == 0


def s3(emulator: Emulator, limit: int) -> ObjectStore:
    return ObjectStore(
        S3Store(
            emulator.bucket,
            prefix=unique_prefix(),
            retry_config=FAST_RETRY,
            **emulator.storage_options(),
        ),
        max_concurrency=limit,
    )


async def test_threads_loops_and_tasks_share_the_limit(emulator: Emulator) -> None:
    limit = 4
    store = s3(emulator, limit)
    keys = [f"c/{i}" for i in range(16)]
    await store.set_many([(key, DATA) for key in keys])
    emulator.reset_stats()
    store.reset_stats()
    emulator.set_latency(5)
    requests = [RangeRequest(key, ByteRange.of(i * 1024, 512)) for key in keys for i in range(4)]
    expected = [DATA[r.byte_range.offset : r.byte_range.offset + 512] for r in requests]
    results: list[bool] = []

    async def read() -> None:
        with config.set(coalesce_gap_bytes=0):
            answers = await store.get_partial_values(requests)
        results.append([bytes(a) for a in answers] == expected)

    def own_loop() -> None:  # a thread running its own event loop
        asyncio.run(read())

    def via_portal(portal: anyio.from_thread.BlockingPortal) -> None:  # the sync facade's way
        portal.call(read)

    with anyio.from_thread.start_blocking_portal() as portal:
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(anyio.to_thread.run_sync, own_loop)
                tg.start_soon(anyio.to_thread.run_sync, via_portal, portal)
            for _ in range(8):
                tg.start_soon(read)
    assert results == [True] * 16
    stats = emulator.stats()
    assert stats["requests"] == 16 * len(requests)
    assert 1 < stats["peak_inflight"] <= limit
    assert store.budget.peak_inflight == limit


async def test_burst_of_503s_lowers_then_restores_the_limit(emulator: Emulator) -> None:
    with config.set(throttle_recovery_successes=2):  # read when the budget is made
        store = s3(emulator, 16)
        budget = store.budget
    assert budget.recovery_successes == 2
    keys = [f"c/{i}" for i in range(64)]
    await store.set_many([(key, DATA[:256]) for key in keys])
    emulator.reset_stats()
    emulator.inject("status", count=24, status=503, methods=["GET"])
    store.reset_stats()
    answers = await store.get_partial_values([RangeRequest(key) for key in keys])
    assert all(bytes(a) == DATA[:256] for a in answers)
    assert budget.lowest_limit < 16  # it backed off ...
    assert store.stats()["throttled"] == 24
    # ... and grows back as requests succeed: +1 per 2 successes.
    lowest = budget.limit
    await store.get_partial_values([RangeRequest(key) for key in keys[: 2 * (16 - lowest)]])
    assert budget.limit == 16
    assert emulator.stats()["by_status"]["503"] == 24


def test_budget_pickles_as_a_fresh_one() -> None:
    import pickle

    budget = RequestBudget(8, recovery_successes=3)
    budget.throttled(Slot(0))
    copy = pickle.loads(pickle.dumps(budget))
    assert (copy.maximum, copy.limit, copy.recovery_successes) == (8, 8, 3)
    assert copy.lowest_limit == 8


async def test_object_store_pickles_after_use(emulator: Emulator) -> None:
    import pickle

    store = s3(emulator, 4)
    await store.set("k", b"abc")
    copy = pickle.loads(pickle.dumps(store))
    assert copy == store
    assert bytes(await copy.get("k")) == b"abc"
    assert copy.budget is store.budget  # equal stores in one process share one runtime
