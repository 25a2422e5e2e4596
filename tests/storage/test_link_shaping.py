"""A store's requests follow the link its reads measured (`RequestShape.of(..., link)`):
where one answer's body comes fast, ranges a request's cost apart are read as one;
where bodies are slow, the config's sizes stand. Counted on the emulator's requests."""

from __future__ import annotations

from collections.abc import Callable

from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage import ObjectStore
from aiozarr.storage.policy import RequestShape
from aiozarr.storage.policy.statistics import RequestStats
from aiozarr.storage.protocol import RangeRequest

KiB, MiB = 1 << 10, 1 << 20
DATA = bytes(range(256)) * (32 * KiB)  # 8 MiB
# Eight 64 KiB ranges 100 KiB apart: farther than the default gap (64 KiB).
WANTED = [ByteRange.of(i * 164 * KiB, 64 * KiB) for i in range(8)]


async def read_apart(store: ObjectStore, emulator: Emulator) -> int:
    """Read WANTED; the requests it took."""
    emulator.reset_stats()
    answers = await store.get_partial_values([RangeRequest("big", r) for r in WANTED])
    assert [bytes(a) for a in answers] == [DATA[r.offset : r.end] for r in WANTED]
    return emulator.stats()["requests"]


async def test_a_store_new_to_its_link_reads_by_the_config(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    store = emulator_s3_store()
    await store.set("big", DATA)
    assert store.runtime.statistics.link() is None
    assert await read_apart(store, emulator) == 8


async def test_a_fast_link_reads_ranges_a_request_apart_as_one(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    store = emulator_s3_store()
    await store.set("big", DATA)
    assert bytes(await store.get("big")) == DATA  # a large read measures the link
    link = store.runtime.statistics.link()
    assert link is not None
    gap = RequestShape.of(store.capabilities, link=link).gap_bytes
    # The gaps are 100 KiB: one request where the link moves them in a request's cost
    # (at 51 MB/s or more, the emulator on this machine), else one each.
    assert await read_apart(store, emulator) == (1 if gap >= 100 * KiB else 8)


async def test_a_slow_link_keeps_the_configs_gap(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    store = emulator_s3_store()
    await store.set("big", DATA)
    emulator.set_network(latency_ms=5, bandwidth_mbps=16)  # at most 16 MB/s an answer
    assert bytes(await store.get("big")) == DATA
    link = store.runtime.statistics.link()
    assert link is not None and link.body_bytes_per_s < 32 * MiB
    assert RequestShape.of(store.capabilities, link=link).gap_bytes == 64 * KiB
    assert await read_apart(store, emulator) == 8


def test_the_link_follows_a_slower_network_within_sixteen_large_reads() -> None:
    """A store read fast for a while, then over a slow network (a loaded link, another
    route): after 16 large reads the link says slow, so the next read is cut into parts
    again rather than keeping the fast link's whole-object requests."""
    stats = RequestStats()
    stats.first_bytes.add(None, 0.02)
    for _ in range(100):
        stats.body_times.add(None, 0.001)  # 1 ms a MiB: ~1 GB/s
    for _ in range(16):
        stats.body_times.add(None, 1 / 90)  # 90 MB/s an answer, as S3 gives
    link = stats.link()
    assert link is not None and link.body_bytes_per_s < 100 * MiB
