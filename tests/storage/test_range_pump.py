"""A batch's single ranges sent from its one task (`storage/policy/pump.py`).

Against the emulator, through `CountingStore` over `ObjectStore`: the ranges go out
without a task each, and every guarantee of the request policy holds for them: the
budget and the parts of one key, failures retried as `run_request` retries them, a
missing key asked for once, timeouts, a cancelled batch that leaves nothing behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest
from tests.servers import emulator_object_store

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.protocol import RangeRequest

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("fast_retries")]

T = TypeVar("T")

DATA = bytes(range(256)) * 64  # 16 KiB
RANGES = [ByteRange.of(i * 512, 100) for i in range(32)]


async def counted(emulator: Emulator, keys: list[str]) -> CountingStore:
    """A counting store over the emulator holding DATA at `keys`, its counts at zero."""
    store = emulator_object_store(emulator)
    await store.set_many([(key, DATA) for key in keys])
    emulator.reset_stats()
    return CountingStore(store)


def expected(byte_ranges: list[ByteRange]) -> list[bytes]:
    return [DATA[r.offset : r.offset + (r.length or 0)] for r in byte_ranges]


@pytest.fixture(autouse=True)
def no_coalescing() -> Any:
    with config.set(coalesce_gap_bytes=0):  # one request per range
        yield


async def with_tasks(read: Awaitable[T]) -> tuple[T, int]:
    """`await read`, and the most tasks it had running at once beside this one."""
    peak = 0

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, len(asyncio.all_tasks()))
            await asyncio.sleep(0)

    before = len(asyncio.all_tasks())
    watcher = asyncio.ensure_future(watch())
    try:
        return await read, peak - before - 1
    finally:
        watcher.cancel()


async def test_a_batch_sends_its_ranges_without_a_task_each(emulator: Emulator) -> None:
    store = await counted(emulator, ["k"])
    with config.set(parts_per_object=64):
        requests = [RangeRequest("k", r) for r in RANGES]
        answers, tasks = await with_tasks(store.get_versioned_values(requests))
    assert [bytes(a[0]) for a in answers if a] == expected(RANGES)
    assert len({a[1] for a in answers if a}) == 1  # one version: the value's ETag
    assert store.counts["get"] == emulator.stats()["requests"] == len(RANGES)
    assert store.inflight == 0
    # The batch's own tasks (its stream's, its fan-in's), not one per range: the 32
    # ranges are in flight at once.
    assert tasks <= 4
    assert store.peak_inflight == len(RANGES)


@pytest.mark.parametrize(
    ("kind", "options", "throttled"),
    [
        pytest.param("status", {"status": 503}, 1, id="503"),
        pytest.param("status", {"status": 500}, 0, id="500"),
        pytest.param("reset", {}, 0, id="reset"),
        pytest.param("truncate", {}, 0, id="truncate"),
    ],
)
async def test_a_failed_first_try_is_retried_alone(
    emulator: Emulator, kind: str, options: dict[str, Any], throttled: int
) -> None:
    store = await counted(emulator, ["k"])
    emulator.inject(kind, count=1, methods=["GET"], **options)
    answers = await store.get_partial_values([RangeRequest("k", r) for r in RANGES])
    assert [bytes(a) for a in answers] == expected(RANGES)
    assert emulator.stats()["requests"] == len(RANGES) + 1  # the failed range, once more
    stats = store.inner.stats()
    assert (stats["retries"], stats["errors"], stats["throttled"]) == (1, 1, throttled)
    assert store.counts["get"] == len(RANGES) + 1
    assert store.inner.runtime.requests.inflight == 0


async def test_a_range_failing_every_try_names_its_key(emulator: Emulator) -> None:
    store = await counted(emulator, ["k", "bad"])
    emulator.inject("status", status=500, methods=["GET"], key_glob="*bad")
    requests = [RangeRequest("k", RANGES[0]), RangeRequest("bad", RANGES[1])]
    with pytest.raises(Exception, match=r"'bad'.*gave up after 4 attempts"):
        await store.get_partial_values(requests)
    assert store.inner.runtime.requests.inflight == 0


async def test_missing_keys_are_asked_for_once(emulator: Emulator) -> None:
    store = await counted(emulator, ["k"])
    requests = [RangeRequest(f"gone/{i}", ByteRange.of(0, 10)) for i in range(4)]
    requests.append(RangeRequest("k", ByteRange.last(10)))
    answers = await store.get_partial_values(requests)
    assert answers[:4] == [None] * 4
    assert bytes(answers[4]) == DATA[-10:]
    assert emulator.stats()["requests"] == 5
    assert store.inner.stats()["retries"] == 0


async def test_a_late_range_times_out_and_is_retried(emulator: Emulator) -> None:
    store = await counted(emulator, ["k"])
    emulator.inject("late", count=1, methods=["GET"], key_glob="*k", delay_s=30.0)
    with config.set(request_timeout_s=1.0):
        answers = await store.get_partial_values([RangeRequest("k", r) for r in RANGES[:4]])
    assert [bytes(a) for a in answers] == expected(RANGES[:4])
    assert store.inner.stats()["timeouts"] == 1
    assert emulator.stats()["requests"] == 5


async def test_a_cancelled_batch_leaves_no_task_and_no_slot(emulator: Emulator) -> None:
    store = await counted(emulator, ["k"])
    emulator.inject("late", methods=["GET"], delay_s=30.0)
    before = asyncio.all_tasks()
    batch = asyncio.ensure_future(
        store.get_partial_values([RangeRequest("k", r) for r in RANGES[:8]])
    )
    while emulator.stats()["faults"] < 8:
        await asyncio.sleep(0.01)
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    assert asyncio.all_tasks() == before
    assert store.inner.runtime.requests.inflight == 0
    assert store.inflight == 0


async def test_the_ranges_of_one_key_keep_to_its_parts(emulator: Emulator) -> None:
    store = await counted(emulator, ["a", "b"])
    requests = [RangeRequest(key, r) for key in ("a", "b") for r in RANGES]
    with config.set(parts_per_object=3):
        answers = await store.get_partial_values(requests)
    assert [bytes(a) for a in answers] == expected(RANGES) * 2
    assert store.peak_inflight == 6  # three of each key at once


async def test_batches_share_the_budget_in_turn(emulator: Emulator) -> None:
    store = await counted(emulator, ["a", "b"])
    budget = store.inner.runtime.requests
    maximum = budget.maximum
    budget.set_maximum(2)
    budget.reset_peaks()
    try:
        with config.set(parts_per_object=64):
            both = await asyncio.gather(
                *(
                    store.get_partial_values([RangeRequest(key, r) for r in RANGES])
                    for key in ("a", "b")
                )
            )
    finally:
        budget.set_maximum(maximum)
    assert [[bytes(a) for a in answers] for answers in both] == [expected(RANGES)] * 2
    assert budget.peak_inflight == 2
    assert budget.inflight == 0


async def test_ranges_that_coalesce_are_one_request_sent_alike(emulator: Emulator) -> None:
    # Each key's ranges lie within the gap of each other: one request per key, sent as a
    # single range is (no task), its answer cut back into the ranges asked for; a
    # failed one retried the same way.
    keys = [f"k{i}" for i in range(8)]
    store = await counted(emulator, keys)
    emulator.inject("status", count=1, status=503, methods=["GET"], key_glob="*k1")
    requests = [RangeRequest(key, r) for key in keys for r in RANGES[:8]]
    with config.set(coalesce_gap_bytes=1024):
        answers, tasks = await with_tasks(store.get_versioned_values(requests))
    assert [bytes(a[0]) for a in answers if a] == expected(RANGES[:8]) * 8
    versions = [{a[1] for a in answers[k * 8 : k * 8 + 8] if a} for k in range(8)]
    assert [len(v) for v in versions] == [1] * 8  # each key's answers: one version
    assert emulator.stats()["requests"] == 9  # one per key, and the retry of k1's
    assert store.inner.stats()["retries"] == 1
    assert [r for _, _, r in store.requests] == [ByteRange.of(0, 3684)] * 9
    assert tasks <= 5  # the batch's, and k1's retry: not one per key


class Heard:
    """A `RangeListener` that records what it hears."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def began(self) -> None:
        self.events.append("began")

    def done(self, answer: object) -> None:
        self.events.append("done")


async def test_a_range_cancelled_as_its_headers_come_reads_no_body(emulator: Emulator) -> None:
    # A hedge's loser (or a cancelled batch's range) whose headers are in, their
    # callback not yet run: the cancel comes too late for obstore's future, and the
    # body was read all the same, its listener told of an answer after `cancel`.
    store = emulator_object_store(emulator)
    await store.set("k", DATA)
    heard = Heard()
    send = store.send_range("k", ByteRange.of(0, 4096), heard)
    headers: Any = send._future  # type: ignore[attr-defined]
    while not headers.done():  # done in this turn: its callback runs in the next
        await asyncio.sleep(0)
    send.cancel()
    for _ in range(10):
        await asyncio.sleep(0)
    while emulator.stats()["inflight"]:
        await asyncio.sleep(0.01)
    assert bytes(await store.get("k", ByteRange.of(0, 16))) == DATA[:16]
    assert heard.events == []
