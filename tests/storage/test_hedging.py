"""Hedged reads: a read far slower than its peers is sent again; the first answer wins.

Slow is an answer that has not begun long after its peers' did (`late` faults: the
cloud's tail), or, where reads of its size are known, one that takes far longer in all
(`slow` faults: a trickling body).

The counts asserted hold however loaded the machine is. A fault with `count=1` goes to
the first matching request that reaches the server, and a hedge's copy is sent when its
timer fires: on a loaded machine the first copy could reach the server after its copy,
which would then meet the fault instead. `faulted_first` rules that out by holding this
event loop (so no hedge timer can fire) until the server has met the fault. Warm-up
reads are not hedged, so no copy of theirs reaches the server after its counters were
reset. Where a test says a read is NOT hedged, its delays leave a wide margin (a late
answer a fraction of its limit).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import NamedTuple, TypeVar

import numpy as np
import pytest
from tests.servers import emulator_object_store, unique_prefix

import aiozarr
from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.policy import retry
from aiozarr.storage.policy.hedge_timer import CROWD, CROWD_SHARE, HedgeTimer
from aiozarr.storage.policy.runtime import StoreRuntime
from aiozarr.storage.policy.statistics import InFlight, RequestStats
from aiozarr.storage.protocol import RangeRequest

pytestmark = pytest.mark.timeout(60)

DATA = bytes(range(256)) * 32  # 8 KiB
SLOW_S = 20.0  # far beyond the test's run time: only a hedge gets this read done in time

T = TypeVar("T")


@pytest.fixture(autouse=True)
def hedging() -> Iterator[None]:
    with config.set(
        hedge_reads=True,
        hedge_min_delay_s=0.05,
        hedge_p95_multiple=3.0,
        retry_base_delay_s=0.001,
        retry_max_delay_s=0.01,
    ):
        yield


class Warmed(NamedTuple):
    store: ObjectStore
    before: dict[str, int]  # the counters once warm

    def counted(self, event: str) -> int:
        """How often `event` happened since the store was warm."""
        return self.store.runtime.statistics.counts()[event] - self.before[event]


async def warmed_store(emulator: Emulator, keys: list[str]) -> Warmed:
    """A store holding DATA at `keys` that has seen enough 1 KiB reads to know their p95.

    Its counters are not reset (that would forget the latencies too): `counted` says
    what happened since."""
    store = emulator_object_store(emulator)
    await store.set_many([(key, DATA) for key in keys])
    # Not hedged: no copy of theirs may reach the server after its counters are reset.
    with config.set(hedge_reads=False):
        for _ in range(2):
            requests = [RangeRequest(key, ByteRange.of(0, 1024)) for key in keys]
            await store.get_partial_values(requests)
    assert store.runtime.statistics.latencies.p95(1024) is not None
    emulator.reset_stats()
    return Warmed(store, store.runtime.statistics.counts())


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait (at most 30 s) until `condition()` holds."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        await asyncio.sleep(0.001)


async def faulted_first(
    read: Awaitable[T],
    statistics: RequestStats,
    emulator: Emulator,
    *,
    requests: int = 1,
    faults: int = 1,
) -> T:
    """`await read`, its first copies certain to meet the faults injected for them.

    Once `read` has sent its first `requests` (the store's `statistics` count them as
    they go), this thread, and so its event loop, waits until the server has met
    `faults` faults since its counters were reset: no hedge timer can fire and send a
    copy before the requests it races have reached the server, however late they come.
    """
    sent = statistics.counts()["requests"] + requests
    task = asyncio.ensure_future(read)
    while statistics.counts()["requests"] < sent and not task.done():
        await asyncio.sleep(0)  # one turn of the loop: a timer fired now sends next turn
    deadline = time.monotonic() + 10
    while not task.done() and emulator.stats()["faults"] < faults:
        assert time.monotonic() < deadline, f"the server met {emulator.stats()['faults']} faults"
        time.sleep(0.001)  # holds the loop: its hedge timers wait
    return await task


async def test_slow_read_is_hedged(emulator: Emulator) -> None:
    keys = [f"c/{i}" for i in range(20)]
    warm = await warmed_store(emulator, keys)
    emulator.inject("slow", count=1, key_glob="*c/7", methods=["GET"], delay_s=SLOW_S)
    batch = warm.store.get_partial_values(
        [RangeRequest(key, ByteRange.of(1024, 1024)) for key in keys]
    )
    statistics = warm.store.runtime.statistics
    answers = await faulted_first(batch, statistics, emulator, requests=len(keys))
    assert [bytes(a) for a in answers] == [DATA[1024:2048]] * len(keys)
    assert warm.counted("hedges_issued") >= 1
    assert warm.counted("hedges_won") >= 1  # the copy answered; the slow one was dropped
    assert warm.counted("retries") == 0
    assert emulator.stats()["faults"] == 1


async def test_single_get_is_hedged(emulator: Emulator) -> None:
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    emulator.inject("slow", count=1, key_glob="*c/3", methods=["GET"], delay_s=SLOW_S)
    read = warm.store.get("c/3", ByteRange.of(0, 1024))
    assert bytes(await faulted_first(read, warm.store.runtime.statistics, emulator)) == DATA[:1024]
    assert warm.counted("hedges_won") == 1
    assert emulator.stats()["requests"] == 2


async def test_a_late_answer_is_hedged_before_reads_of_its_size_are_known(
    emulator: Emulator,
) -> None:
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    assert warm.store.runtime.statistics.latencies.p95(4096) is None
    emulator.inject("late", count=1, key_glob="*c/3", methods=["GET"], delay_s=SLOW_S)
    read = warm.store.get("c/3", ByteRange.of(0, 4096))
    assert bytes(await faulted_first(read, warm.store.runtime.statistics, emulator)) == DATA[:4096]
    assert (warm.counted("hedges_issued"), warm.counted("hedges_won")) == (1, 1)
    assert emulator.stats()["requests"] == 2


async def test_a_store_hedges_from_its_first_answer_on(emulator: Emulator) -> None:
    # One read seen: a wait of twice its first byte's is slow already.
    store = emulator_object_store(emulator)
    await store.set_many([("a", DATA), ("b", DATA)])
    assert bytes(await store.get("a", ByteRange.of(0, 1024))) == DATA[:1024]
    assert store.runtime.statistics.first_bytes.median(None) is not None
    emulator.inject("late", count=1, key_glob="*b", methods=["GET"], delay_s=SLOW_S)
    read = store.get("b", ByteRange.of(0, 1024))
    assert bytes(await faulted_first(read, store.runtime.statistics, emulator)) == DATA[:1024]
    assert store.runtime.statistics.counts()["hedges_won"] == 1


@pytest.mark.parametrize(
    "byte_range",
    [None, ByteRange.of(0, 4096)],
    ids=["a whole value (size unknown)", "a range over hedge_large_bytes"],
)
async def test_a_large_read_waits_longer_before_its_hedge(
    emulator: Emulator, byte_range: ByteRange | None
) -> None:
    # A duplicate of it moves its bytes twice should the first answer then begin.
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    expected = DATA[: 4096 if byte_range else None]
    with config.set(hedge_large_bytes=4095, hedge_large_min_delay_s=1.0):
        # Late by a fifth of its floor (and by four of the small reads' 0.05 s).
        emulator.inject("late", count=1, key_glob="*c/3", methods=["GET"], delay_s=0.2)
        assert bytes(await warm.store.get("c/3", byte_range)) == expected
        assert warm.counted("hedges_issued") == 0  # late, but not past its floor
        emulator.inject("late", count=1, key_glob="*c/4", methods=["GET"], delay_s=SLOW_S)
        read = warm.store.get("c/4", byte_range)
        statistics = warm.store.runtime.statistics
        assert bytes(await faulted_first(read, statistics, emulator, faults=2)) == expected
        assert warm.counted("hedges_won") == 1


async def test_a_slow_first_answer_does_not_stop_hedging_after_it(emulator: Emulator) -> None:
    store = emulator_object_store(emulator)
    keys = ["a", "b", "c", "d"]
    await store.set_many([(key, DATA) for key in keys])
    emulator.inject("late", count=1, key_glob="*a", methods=["GET"], delay_s=1.0)
    for key in keys[:3]:  # the first meets the tail, with nothing to compare it with
        assert bytes(await store.get(key, ByteRange.of(0, 1024))) == DATA[:1024]
    # Late by less than twice the first wait (the limit, were it the longest wait seen).
    emulator.inject("late", count=1, key_glob="*d", methods=["GET"], delay_s=1.5)
    read = store.get("d", ByteRange.of(0, 1024))
    assert (
        bytes(await faulted_first(read, store.runtime.statistics, emulator, faults=2))
        == (DATA[:1024])
    )
    assert store.runtime.statistics.counts()["hedges_won"] == 1


async def test_a_flowing_body_is_not_raced_before_reads_of_its_size_are_known(
    emulator: Emulator,
) -> None:
    # Its answer began on time: a duplicate would only move the same bytes twice. The
    # body takes over three limits; its first byte, sent at once, has a whole limit.
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    emulator.inject("slow", count=1, key_glob="*c/3", methods=["GET"], delay_s=1.0)
    with config.set(hedge_min_delay_s=0.3):
        assert bytes(await warm.store.get("c/3", ByteRange.of(0, 4096))) == DATA[:4096]
    assert warm.counted("hedges_issued") == 0
    assert emulator.stats()["requests"] == 1


async def test_a_whole_value_is_not_raced_on_its_body_after_small_whole_values(
    emulator: Emulator,
) -> None:
    # Whole values share one size class (their size is not known before the answer):
    # the small documents read first tell no limit on a large one's body.
    store = emulator_object_store(emulator)
    await store.set_many([(f"m/{i}", b"{}" * 50) for i in range(40)] + [("big", DATA)])
    with config.set(hedge_reads=False):  # no copy of theirs reaches the server later
        for i in range(40):
            await store.get(f"m/{i}")
    assert store.runtime.statistics.latencies.p95(None) is not None
    before = store.runtime.statistics.counts()["hedges_issued"]
    emulator.reset_stats()
    emulator.inject("slow", count=1, key_glob="*big", methods=["GET"], delay_s=1.0)
    assert bytes(await store.get("big")) == DATA
    assert store.runtime.statistics.counts()["hedges_issued"] == before
    assert emulator.stats()["requests"] == 1


async def test_a_failed_copy_is_sent_again_while_its_straggler_is_still_slow(
    emulator: Emulator,
) -> None:
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    # The first copy answers after 20 s; the second fails: a third goes one limit later
    # and answers (a copy meets the store's failures as often as any read).
    emulator.inject("slow", count=1, key_glob="*c/3", methods=["GET"], delay_s=SLOW_S)
    emulator.inject("status", count=1, key_glob="*c/3", methods=["GET"], status=500)
    read = warm.store.get("c/3", ByteRange.of(0, 1024))
    assert bytes(await faulted_first(read, warm.store.runtime.statistics, emulator)) == DATA[:1024]
    assert (warm.counted("hedges_issued"), warm.counted("hedges_won")) == (2, 1)
    assert warm.counted("retries") == 0  # the read itself never failed
    assert emulator.stats()["requests"] == 3


async def test_a_cancelled_hedged_read_leaves_no_task(emulator: Emulator) -> None:
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    emulator.inject("slow", count=2, key_glob="*c/3", methods=["GET"], delay_s=SLOW_S)
    before = asyncio.all_tasks()
    read = asyncio.ensure_future(warm.store.get("c/3", ByteRange.of(0, 1024)))
    await until(lambda: emulator.stats()["faults"] == 2, "both copies reached the server")
    read.cancel()  # both copies on their way, each trickling for 20 s
    with pytest.raises(asyncio.CancelledError):
        await read
    assert warm.counted("hedges_issued") == 1
    assert asyncio.all_tasks() == before


async def test_hedges_are_capped(emulator: Emulator) -> None:
    # Every read late, one after another (each alone in its wait, so each a straggler):
    # at most the burst allowance (10) plus hedge_max_fraction of reads may be hedged.
    keys = [f"c/{i}" for i in range(20)]
    warm = await warmed_store(emulator, keys)
    for key in keys[:10]:  # hedged: one of the two copies answers at once
        emulator.inject("late", count=1, key_glob=f"*{key}", methods=["GET"], delay_s=SLOW_S)
    # The eleventh is over the cap: it waits for its late answer.
    emulator.inject("late", count=1, key_glob=f"*{keys[10]}", methods=["GET"], delay_s=0.5)
    with config.set(hedge_max_fraction=0.0, hedge_p95_multiple=1.0):
        for key in keys[:11]:
            assert bytes(await warm.store.get(key, ByteRange.of(0, 1024))) == DATA[:1024]
    assert warm.counted("hedges_issued") == 10


async def test_a_crowd_of_slow_bodies_is_not_hedged(emulator: Emulator) -> None:
    # Every read of a batch slow: the store (or this process) is slow for everyone, and
    # copies would only add to it.
    keys = [f"c/{i}" for i in range(20)]
    warm = await warmed_store(emulator, keys)
    emulator.inject("slow", methods=["GET"], delay_s=0.3)
    # A multiple of 1: a busy machine's slow warm-up reads must not lift the hedge
    # delay above the injected 0.3 s, or nothing would be hedged anyway. A limit of
    # 0.25 s: the crowd, looked at again one limit later, has gone by then, unless some
    # bodies end 0.2 s after the others (at the 50 ms floor, 50 ms after was enough).
    with config.set(hedge_p95_multiple=1.0, hedge_min_delay_s=0.25):
        answers = await warm.store.get_partial_values(
            [RangeRequest(key, ByteRange.of(0, 1024)) for key in keys]
        )
    assert all(bytes(a) == DATA[:1024] for a in answers)
    assert warm.counted("hedges_issued") == 0
    assert emulator.stats()["requests"] == 20


async def test_writes_are_never_hedged(emulator: Emulator) -> None:
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    emulator.inject("slow", count=1, methods=["PUT"], delay_s=0.5)
    await warm.store.set("w", DATA[:1024])
    assert warm.counted("hedges_issued") == 0
    assert emulator.stats()["by_method"]["PUT"] == 1


async def test_hedging_can_be_switched_off(emulator: Emulator) -> None:
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    emulator.inject("slow", count=1, key_glob="*c/3", methods=["GET"], delay_s=0.5)
    with config.set(hedge_reads=False):
        assert bytes(await warm.store.get("c/3", ByteRange.of(0, 1024))) == DATA[:1024]
    assert warm.counted("hedges_issued") == 0
    assert emulator.stats()["requests"] == 1


async def test_the_hedge_timer_gives_an_answer_woken_with_it_one_more_look() -> None:
    # On a busy loop the limit and the answer's wake-up fall due in one turn: the answer,
    # though run after the timer, still counts as on time.
    loop = asyncio.get_running_loop()
    sent: list[str] = []
    in_flight = InFlight()
    raced = HedgeTimer(0.0, None, lambda: sent.append("raced"), in_flight)
    answered = HedgeTimer(0.0, None, lambda: sent.append("answered"), in_flight)
    raced.start()
    answered.start()
    loop.call_later(0.0, answered.answer_began)
    await asyncio.sleep(0.05)
    assert sent == ["raced"]


async def test_a_body_trickling_alone_is_raced_after_a_crowd_held_its_wait() -> None:
    # Under load, a read's wait for its first byte can fall due while a crowd of its
    # batch is still waiting too (held: not hedged then). Once the crowd has answered,
    # its own body trickling alone is a straggler's and is raced all the same.
    sent: list[str] = []
    in_flight = InFlight()
    crowd = [object() for _ in range(CROWD)]
    for read in crowd:
        in_flight.add(read, time.monotonic() - 1.0)
    timer = HedgeTimer(0.0, 0.05, lambda: sent.append("copy"), in_flight)
    timer.start()
    await asyncio.sleep(0.02)  # the wait's limit fired: held, the crowd still waiting
    assert sent == []
    for read in crowd:
        in_flight.discard(read)
    timer.answer_began()
    await asyncio.sleep(0.2)
    assert sent == ["copy"]
    timer.cancel()


def test_local_stores_do_not_hedge(tmp_path: object) -> None:
    assert ObjectStore.CAPABILITIES.hedge_reads
    assert not MemoryStore.CAPABILITIES.hedge_reads
    assert not LocalStore.CAPABILITIES.hedge_reads


async def test_a_reopened_dataset_hedges_its_first_read(emulator: Emulator) -> None:
    # Opening a URL again (the array before it gone) finds the store of the first open,
    # with the waits its reads taught it: the new open's metadata read is hedged too.
    url, options = emulator.s3_url(f"{unique_prefix()}/a.zarr"), emulator.storage_options()
    arr = await aiozarr.create_array_async(
        url, storage_options=options, shape=(4,), dtype="i4", chunks=(4,), zarr_format=3
    )
    await arr.setitem(..., np.arange(4))
    first = await aiozarr.open_array_async(url, storage_options=options, mode="r")
    assert (await first.getitem(...)).tolist() == [0, 1, 2, 3]
    del arr, first
    gc.collect()
    statistics = from_url(url, storage_options=options).runtime.statistics
    before = statistics.counts()["hedges_won"]
    emulator.inject("late", count=1, key_glob="*a.zarr/zarr.json", methods=["GET"], delay_s=SLOW_S)
    opening = aiozarr.open_array_async(url, storage_options=options, mode="r", zarr_format=3)
    again = await faulted_first(opening, statistics, emulator)
    assert (await again.getitem(...)).tolist() == [0, 1, 2, 3]
    assert emulator.stats()["faults"] == 1
    assert statistics.counts()["hedges_won"] == before + 1


async def test_a_crowd_of_late_answers_is_not_hedged(emulator: Emulator) -> None:
    # Eight reads at once, every answer late: the slowness is not one read's (on a
    # busy machine, answers read late), and copies of them all would only add to it.
    keys = [f"c/{i}" for i in range(20)]
    warm = await warmed_store(emulator, keys)
    emulator.inject("late", count=8, methods=["GET"], delay_s=0.4)
    # A limit of 0.3 s: the crowd is looked at as it was half a limit ago, and the
    # emulator (on the same two cores) may answer the eight over more than the 25 ms
    # half of the default floor, so the last of them would look alone. Looked at again
    # at 0.6 s, a read is alone only if its answer began 0.2 s after the others'.
    with config.set(hedge_min_delay_s=0.3):
        answers = await warm.store.get_partial_values(
            [RangeRequest(key, ByteRange.of(0, 1024)) for key in keys[:8]]
        )
    assert all(bytes(a) == DATA[:1024] for a in answers)
    assert warm.counted("hedges_issued") == 0
    assert emulator.stats()["requests"] == 8


async def test_a_read_left_waiting_alone_by_a_crowd_is_hedged(emulator: Emulator) -> None:
    # Seven late answers come after 0.4 s; the eighth would take SLOW_S: once the crowd
    # has gone it waits alone, a straggler, and its copy answers. A limit of 0.3 s, as
    # for the crowd above: one of the seven is hedged only if it answers 0.2 s late.
    keys = [f"c/{i}" for i in range(20)]
    warm = await warmed_store(emulator, keys)
    emulator.inject("late", count=1, key_glob="*c/7", methods=["GET"], delay_s=SLOW_S)
    emulator.inject("late", count=7, methods=["GET"], delay_s=0.4)
    statistics = warm.store.runtime.statistics
    with config.set(hedge_min_delay_s=0.3):
        batch = warm.store.get_partial_values(
            [RangeRequest(key, ByteRange.of(0, 1024)) for key in keys[:8]]
        )
        answers = await faulted_first(batch, statistics, emulator, requests=8, faults=8)
    assert all(bytes(a) == DATA[:1024] for a in answers)
    assert (warm.counted("hedges_issued"), warm.counted("hedges_won")) == (1, 1)
    assert emulator.stats()["requests"] == 9


async def test_a_few_stragglers_among_many_reads_sent_together_are_each_hedged(
    emulator: Emulator,
) -> None:
    # A 2 % tail of a batch of hundreds of reads is several slow reads at once: each is
    # a straggler among its batch (less than `CROWD_SHARE` of it), not a crowd.
    keys = [f"c/{i}" for i in range(60)]
    warm = await warmed_store(emulator, keys)
    late = keys[::12]  # five
    for key in late:
        emulator.inject("late", count=1, key_glob=f"*{key}", methods=["GET"], delay_s=SLOW_S)
    assert CROWD <= len(late) - 1 < CROWD_SHARE * len(keys)
    batch = warm.store.get_partial_values(
        [RangeRequest(key, ByteRange.of(0, 1024)) for key in keys]
    )
    statistics = warm.store.runtime.statistics
    answers = await faulted_first(batch, statistics, emulator, requests=60, faults=5)
    assert all(bytes(a) == DATA[:1024] for a in answers)
    assert (warm.counted("hedges_issued"), warm.counted("hedges_won")) == (5, 5)
    assert emulator.stats()["requests"] == 65


def test_a_small_read_waits_no_longer_than_twice_what_reads_of_its_size_take() -> None:
    # Large reads queued behind a busy link set the p95 of waits; a small read not
    # begun in twice the time reads of its size take in all is slow all the same.
    statistics = RequestStats()
    for _ in range(20):
        statistics.first_bytes.add(None, 0.5)
        statistics.latencies.add(1024, 0.03)
    with config.set(hedge_p95_multiple=1.0, hedge_min_delay_s=0.02):
        settings = config.get()
        assert retry.hedge_delays(statistics, 1024, settings) == (0.06, 0.03)
        assert retry.hedge_delays(statistics, 64 << 10, settings) == (0.5, None)


async def test_a_copy_races_in_its_stragglers_slot_when_throttling_left_one(
    emulator: Emulator,
) -> None:
    # 503s have cut the budget to one slot, which the late read holds: a copy that
    # queued for a slot of its own would wait for the very read it races.
    warm = await warmed_store(emulator, [f"c/{i}" for i in range(20)])
    budget = warm.store.runtime.requests
    while budget.limit > 1:
        budget.throttled(await budget.acquire())
        budget.release()
    emulator.inject("late", count=1, key_glob="*c/3", methods=["GET"], delay_s=SLOW_S)
    read = warm.store.get("c/3", ByteRange.of(0, 1024))
    assert bytes(await faulted_first(read, warm.store.runtime.statistics, emulator)) == DATA[:1024]
    assert (warm.counted("hedges_issued"), warm.counted("hedges_won")) == (1, 1)
    assert budget.inflight == 0


async def test_a_read_cancelled_as_its_copy_answers_stays_cancelled() -> None:
    """The read's cancellation reaches its first copy before the winning copy's does:
    the read ends cancelled, not with the copy's answer, and leaves no copy running."""
    runtime = StoreRuntime()
    for _ in range(4):  # answers begin after 1 ms: a read waiting 10 ms is slow
        runtime.statistics.first_bytes.add(None, 0.001)
    tasks_before = asyncio.all_tasks()
    calls = 0

    async def operation() -> bytes:
        nonlocal calls
        calls += 1
        if calls == 1:  # the first copy: never answers
            await asyncio.Event().wait()
        read.cancel()  # the copy: the read is cancelled as the copy answers
        return b"copy"

    request = retry.Request("read", "k", operation, 4, hedge=True)
    with config.set(hedge_min_delay_s=0.01) as settings:
        read = asyncio.ensure_future(retry.run_request(runtime, request, settings))
        with pytest.raises(asyncio.CancelledError):
            await read
    assert calls == 2
    assert asyncio.all_tasks() - tasks_before == set()


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_a_body_under_way_keeps_the_one_timer_on_either_loop(loop_name: str) -> None:
    # The wait's timer, due sooner than the body's limit, looks again when it fires: the
    # read pays for one timer. uvloop's (the sync API's loop) are not asyncio's
    # `TimerHandle`, and each answer there cancelled its timer and set another.
    module = pytest.importorskip(loop_name)

    async def kept() -> bool:
        timer = HedgeTimer(0.05, SLOW_S, lambda: None, InFlight())
        timer.start()
        first = timer._handle
        timer.answer_began()
        try:
            return timer._handle is first
        finally:
            timer.cancel()

    with asyncio.Runner(loop_factory=module.new_event_loop) as runner:
        assert runner.run(kept())
