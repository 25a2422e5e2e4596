"""`store.stats()` agrees with what the server saw, and requests are logged at debug level."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.storage.protocol import RangeRequest


async def test_stats_match_the_emulator_on_a_mixed_workload(
    emulator: Emulator, emulator_s3_store
) -> None:
    store = emulator_s3_store()
    arr = await aiozarr.create_array_async(
        store, "a", shape=(64, 64), dtype="f4", chunks=(8, 8), shards=(32, 32)
    )
    store.reset_stats()  # creation probes missing keys: 404 bodies are not data
    emulator.reset_stats()
    await arr.setitem(..., np.ones((64, 64), dtype="f4"))
    await arr.getitem((slice(3, 40), slice(10, 20)))
    ours, theirs = store.stats(), emulator.stats()
    assert ours["bytes_read"] == theirs["bytes_read"]  # one meaning per name on both sides
    assert ours["bytes_written"] == theirs["bytes_written"]

    # Requests of every kind (the bodies of 404s and listings are not data: counts only).
    await store.get_partial_values([RangeRequest("missing"), RangeRequest("a/zarr.json")])
    await store.delete("a/c/1/1")
    [key async for key in store.list_prefix("a/")]
    ours, theirs = store.stats(), emulator.stats()
    kinds = ("reads", "writes", "deletes", "lists", "stats")
    assert sum(ours.get(kind, 0) for kind in kinds) == theirs["requests"]
    assert ours["reads"] == theirs["by_method"].get("GET", 0) - ours.get("lists", 0)
    assert ours["latency_p95_ms"] >= ours["latency_p50_ms"] > 0
    store.reset_stats()
    assert store.stats()["reads"] == 0


DOCUMENTED = [
    "requests",
    "reads",
    "writes",
    "deletes",
    "stats",
    "lists",
    "bytes_read",
    "bytes_written",
    "retries",
    "errors",
    "timeouts",
    "throttled",
    "hedges_issued",
    "hedges_won",
    "cache_hits",
    "cache_misses",
    "cache_revalidations",
    "revalidates",
    "gave_up",
    "limit",
    "maximum",
    "lowest_limit",
    "inflight",
    "peak_inflight",
    "waiting",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
]


async def test_every_documented_key_is_always_present(emulator_s3_store) -> None:
    store = emulator_s3_store()
    fresh = store.stats()
    assert sorted(fresh) == sorted(DOCUMENTED)
    assert fresh["requests"] == 0 and fresh["latency_p50_ms"] is None
    await store.set("k", b"12345")
    await store.get("k")
    assert store.stats()["requests"] == 2 and store.stats()["bytes_written"] == 5
    store.reset_stats()
    assert sorted(store.stats()) == sorted(DOCUMENTED)
    assert store.stats()["requests"] == 0


async def test_the_emulator_reports_every_key_before_any_request(tmp_path: Path) -> None:
    # an emulator of its own: the session's may still hold an earlier test's straggler
    # (a hedged read's slow first copy trickles on after its copy won)
    async with Emulator(tmp_path) as emulator:
        stats = emulator.stats()
    for key in ("requests", "bytes_read", "bytes_written", "inflight", "peak_inflight"):
        assert stats[key] == 0


async def test_requests_are_logged_at_debug(
    emulator_s3_store, caplog: pytest.LogCaptureFixture
) -> None:
    store = emulator_s3_store()
    await store.set("k", b"12345")
    with caplog.at_level(logging.DEBUG, logger="aiozarr.store"):
        await store.get("k")
        await store.get("nothing")
    lines = [r.getMessage() for r in caplog.records if r.name == "aiozarr.store"]
    assert any("'k'" in line and "ok" in line for line in lines), lines
    assert any("'nothing'" in line and "missing" in line for line in lines), lines


def test_a_crowd_is_a_share_of_the_reads_sent_about_when_the_read_was() -> None:
    from aiozarr.storage.policy.statistics import InFlight

    in_flight = InFlight()
    me, slow = object(), [object() for _ in range(5)]
    answered = [object() for _ in range(54)]
    for token in [me, *slow, *answered]:
        in_flight.add(token, 1.0)
    for token in answered:
        in_flight.discard(token)
    assert in_flight.crowded(me, 2.0, waiting=True, crowd=4)
    assert not in_flight.crowded(me, 2.0, waiting=True, crowd=4, share=0.1)  # 5 of 60
    assert in_flight.crowded(me, 2.0, waiting=True, crowd=4, share=0.05)
    # Reads sent long before (three times as long before it as `since` is after it)
    # are not its peers: five slow of the six sent about when it was is a crowd.
    later = InFlight()
    for token in answered:
        later.add(token, 0.0)
        later.discard(token)
    for token in [me, *slow]:
        later.add(token, 3.0)
    assert later.crowded(me, 4.0, waiting=True, crowd=4, share=0.1)


def test_a_crowd_is_other_reads_sent_by_then_and_still_waiting() -> None:
    from aiozarr.storage.policy.statistics import InFlight

    in_flight = InFlight()
    me, early, began, late = object(), [object() for _ in range(3)], object(), object()
    in_flight.add(me, 0.0)
    for i, token in enumerate(early):
        in_flight.add(token, 1.0 + i)
    in_flight.add(began, 4.0)
    in_flight.began(began, 4.5)
    in_flight.add(late, 9.0)
    # Three others sent by 5.0 still wait for a first byte; the fourth's answer began.
    assert not in_flight.crowded(me, 5.0, waiting=True, crowd=4)
    assert in_flight.crowded(me, 5.0, waiting=False, crowd=4)  # all four still at it
    assert in_flight.crowded(me, 5.0, waiting=True, crowd=3)
    # A read sent after `since` is not one of the crowd, nor is the read asking.
    assert not in_flight.crowded(me, 3.5, waiting=False, crowd=4)
    in_flight.discard(early[0])
    assert not in_flight.crowded(me, 5.0, waiting=False, crowd=4)
    assert in_flight.crowded(late, 9.0, waiting=False, crowd=4)  # me, 2 early, began
