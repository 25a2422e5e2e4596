"""The fault matrix at the store level: a big many-range read through a hostile server.

20 % of requests answer 503, 5 % reset the connection, 2 % truncate the body, 1 % trickle
it slowly. The read must return exactly the right bytes, and the extra requests it costs
must stay within a stated bound. (The array-level twin reads a sharded array.)
"""

from __future__ import annotations

import random

import pytest
from obstore.store import S3Store
from tests.servers import FAST_RETRY, unique_prefix

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import RangeRequest

pytestmark = pytest.mark.timeout(120)

KEYS = 32
VALUE_BYTES = 192 << 10  # 6 MiB in all
RANGES_PER_KEY = 12
RANGE_BYTES = 12 << 10  # 12 KiB ranges 16 KiB apart: none coalesce at gap 0
FAULT_RATE = 0.20 + 0.05 + 0.02  # requests that fail and need one more try each


async def test_fault_matrix_reads_exact_bytes(emulator: Emulator) -> None:
    rng = random.Random(7)
    values = {f"shard/{i}": rng.randbytes(VALUE_BYTES) for i in range(KEYS)}
    store = ObjectStore(
        S3Store(
            emulator.bucket,
            prefix=unique_prefix(),
            retry_config=FAST_RETRY,
            **emulator.storage_options(),
        ),
        max_concurrency=32,
    )
    await store.set_many(values.items())
    requests = [
        RangeRequest(key, ByteRange.of(j * (16 << 10) + rng.randrange(4096), RANGE_BYTES))
        for key in values
        for j in range(RANGES_PER_KEY)
    ]
    rng.shuffle(requests)
    emulator.reset_stats()
    store.reset_stats()
    # Rules are tried in order, each with its own draw: about 20 / 4 / 1.5 / 0.7 %.
    emulator.inject("status", status=503, rate=0.20, methods=["GET"])
    emulator.inject("reset", rate=0.05, methods=["GET"])
    emulator.inject("truncate", rate=0.02, methods=["GET"])
    emulator.inject("slow", rate=0.01, methods=["GET"], delay_s=0.5)

    with config.set(
        coalesce_gap_bytes=0,
        retry_attempts=12,
        retry_base_delay_s=0.002,
        retry_max_delay_s=0.02,
        hedge_min_delay_s=0.05,
    ):
        answers = await store.get_partial_values(requests)

    for request, answer in zip(requests, answers, strict=True):
        start = request.byte_range.offset  # type: ignore[union-attr]
        assert bytes(answer) == values[request.key][start : start + RANGE_BYTES]

    n = len(requests)
    wire = emulator.stats()
    ours = store.stats()
    extra = wire["requests"] - n
    # Each logical request needs 1 / (1 - p) tries on average (p ~ 0.26 here: 0.35 extra
    # per request); the bound allows 0.6 extra per request, plus the hedges, which are
    # themselves capped at 10 + 5 % of requests. Failing this bound means retries are
    # multiplied somewhere (obstore retrying too, whole batches retried for one range).
    assert wire["faults"] > 0.15 * n  # the faults really happened
    assert ours["retries"] > 0.15 * n
    assert extra <= 0.6 * n + ours["hedges_issued"], (wire, ours)
    assert ours["hedges_issued"] <= 10 + 0.05 * ours["requests"]
    assert ours["lowest_limit"] < 32  # the 503s made it back off
    assert ours["gave_up"] == 0
