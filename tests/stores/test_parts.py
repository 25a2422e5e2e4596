"""A read larger than the part size goes out as concurrent ranged parts.

Against the emulator (a real HTTP server), counted by `CountingStore`: the number of
parts, their ranges, the reassembled bytes, a failed part retried alone, and the bound
on parts of one object in flight.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from obstore.store import S3Store
from tests.reliability.proxies import Proxy
from tests.servers import FAST_RETRY, unique_prefix

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import RangeRequest

pytestmark = pytest.mark.timeout(60)

PART = 1000
VALUE = np.random.default_rng(7).integers(0, 256, 10 * PART + 123, dtype=np.uint8).tobytes()


@pytest.fixture(autouse=True)
def small_parts(fast_retries: None) -> Iterator[None]:
    """Parts of 1000 bytes (fast retries, no hedging: counts are exact)."""
    with config.set(max_request_bytes=PART):
        yield


async def stored(emulator: Emulator, endpoint: str | None = None) -> CountingStore:
    """A counting store over a new prefix of the emulator holding "big" (reached through
    `endpoint`, a proxy in front of the emulator, when given)."""
    options = emulator.storage_options()
    if endpoint is not None:
        options["endpoint"] = endpoint
    store = ObjectStore(
        S3Store(emulator.bucket, prefix=unique_prefix(), retry_config=FAST_RETRY, **options)
    )
    await store.set("big", VALUE)
    emulator.reset_stats()
    return CountingStore(store)


def part_ranges(start: int, stop: int) -> list[tuple[int, int]]:
    return [(s, min(s + PART, stop)) for s in range(start, stop, PART)]


def asked(counting: CountingStore) -> list[tuple[int, int]]:
    """The `(start, stop)` of every ranged read, in the order sent."""
    return [(r.offset, r.end) for op, _, r in counting.requests if op == "get" and r]


async def test_a_range_over_the_part_size_is_read_in_parts(emulator: Emulator) -> None:
    counting = await stored(emulator)
    [data] = await counting.get_partial_values([RangeRequest("big", ByteRange.of(0, len(VALUE)))])
    assert bytes(data) == VALUE
    assert counting.counts["get"] == math.ceil(len(VALUE) / PART) == 11
    assert sorted(asked(counting)) == part_ranges(0, len(VALUE))
    assert emulator.stats()["by_method"]["GET"] == 11


async def test_a_range_within_the_part_size_is_one_request(emulator: Emulator) -> None:
    counting = await stored(emulator)
    [data] = await counting.get_partial_values([RangeRequest("big", ByteRange.of(10, PART))])
    assert bytes(data) == VALUE[10 : 10 + PART]
    assert counting.counts["get"] == 1


async def test_coalesced_ranges_are_cut_into_parts(emulator: Emulator) -> None:
    counting = await stored(emulator)
    wanted = [ByteRange.of(s, 400) for s in range(0, 5000, 500)]  # 100-byte gaps: one run
    answers = await counting.get_partial_values([RangeRequest("big", r) for r in wanted])
    assert [bytes(a) for a in answers] == [VALUE[r.offset : r.end] for r in wanted]
    assert counting.counts["get"] == math.ceil(4900 / PART)


async def test_a_failed_part_is_retried_alone(emulator: Emulator) -> None:
    counting = await stored(emulator)
    emulator.inject("status", status=503, count=1, methods=["GET"])
    [data] = await counting.get_partial_values([RangeRequest("big", ByteRange.of(0, len(VALUE)))])
    assert bytes(data) == VALUE
    assert emulator.stats()["faults"] == 1
    # One part went out twice; every other part once.
    sent = asked(counting)
    assert len(sent) == 12
    assert sorted(set(sent)) == part_ranges(0, len(VALUE))
    assert sorted(sent.count(r) for r in set(sent)) == [1] * 10 + [2]


async def test_a_truncated_part_is_retried_alone(emulator: Emulator) -> None:
    counting = await stored(emulator)
    emulator.inject("truncate", count=1, methods=["GET"])
    [data] = await counting.get_partial_values([RangeRequest("big", ByteRange.of(0, len(VALUE)))])
    assert bytes(data) == VALUE
    sent = asked(counting)
    assert sorted(sent.count(r) for r in set(sent)) == [1] * 10 + [2]


async def test_parts_of_one_object_in_flight_are_bounded(emulator: Emulator) -> None:
    with Proxy(emulator.endpoint).running() as proxy:
        counting = await stored(emulator, proxy.endpoint)
        # The first 3 parts are held until all 3 have arrived, so the bound is reached
        # however slowly the machine runs; every answer waits 20 ms more, so a part past
        # the bound would be in flight beside them.
        proxy.hold(3)
        emulator.set_latency(20)
        with config.set(parts_per_object=3):
            [data] = await counting.get_partial_values(
                [RangeRequest("big", ByteRange.of(0, len(VALUE)))]
            )
    assert bytes(data) == VALUE
    assert counting.counts["get"] == 11
    assert counting.peak_inflight == 3
    assert emulator.stats()["peak_inflight"] <= 3
