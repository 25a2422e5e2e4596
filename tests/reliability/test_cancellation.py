"""Cancelling `await arr.getitem(...)` mid-read leaves nothing running.

After a task cancel or an anyio timeout during a large read from a slow emulator: no
task the read started is left (`asyncio.all_tasks()`), no codec work goes on (the
progress count stops moving), and the emulator's requests in flight drop to 0 with no
new request arriving. (The sync facade's Ctrl-C and timeout: tests/sync/test_facade.py.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.storage.opening.url import from_url

pytestmark = pytest.mark.timeout(60)


async def _wait_for(condition: Callable[[], bool], what: str, limit_s: float = 10.0) -> None:
    for _ in range(int(limit_s / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def _by_task_cancel(read: Callable[[], Awaitable[Any]], emulator: Emulator) -> None:
    task = asyncio.create_task(read())
    await _wait_for(lambda: emulator.stats()["inflight"] >= 4, "requests in flight")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def _by_move_on_after(read: Callable[[], Awaitable[Any]], emulator: Emulator) -> None:
    with anyio.move_on_after(0.3) as scope:
        await read()
    assert scope.cancelled_caught


async def _by_cancel_scope(read: Callable[[], Awaitable[Any]], emulator: Emulator) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await _wait_for(lambda: emulator.stats()["inflight"] >= 4, "requests in flight")
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    "cancel",
    [_by_task_cancel, _by_move_on_after, _by_cancel_scope],
    ids=["task.cancel", "move_on_after", "cancel_scope"],
)
async def test_cancelled_read_leaves_nothing_running(
    emulator: Emulator,
    s3: tuple[str, dict[str, Any]],
    cancel: Callable[[Callable[[], Awaitable[Any]], Emulator], Awaitable[None]],
) -> None:
    url, options = s3
    data = np.random.default_rng(1).random((512, 512))  # 2 MiB, 64 chunks of 32 KiB
    done: list[int] = []

    # From the store's first use: its request budget takes the settings in force there.
    with config.set(max_concurrency=8, hedge_reads=False):
        arr = await aiozarr.create_array_async(
            url,
            shape=data.shape,
            dtype="f8",
            chunks=(64, 64),
            storage_options=options,
            compressors=None,
        )
        await arr.setitem(..., data)
        before = asyncio.all_tasks()
        store = from_url(url, storage_options=options)
        reader = await aiozarr.open_array_async(store, mode="r")
        emulator.set_latency(200)  # 8 rounds of 200 ms: the read takes > 1.5 s

        async def read() -> Any:
            return await reader.getitem(..., progress=lambda n, total: done.append(n))

        emulator.reset_stats()
        await cancel(read, emulator)

    assert len(done) < 64  # the read really was cut short
    await _wait_for(lambda: emulator.stats()["inflight"] == 0, "the emulator's requests to end")
    await _wait_for(
        lambda: asyncio.all_tasks() <= before | {asyncio.current_task()}, "tasks to finish"
    )
    requests, progressed = emulator.stats()["requests"], len(done)
    await asyncio.sleep(0.5)  # longer than two request latencies
    assert emulator.stats()["requests"] == requests, "requests were sent after the cancel"
    assert len(done) == progressed, "chunks were decoded after the cancel"
    assert store.budget.stats()["inflight"] == 0
    left = {t for t in asyncio.all_tasks() if t not in before} - {asyncio.current_task()}
    assert not left, left

    # The store is still usable: slots were returned.
    emulator.set_latency(0)
    np.testing.assert_array_equal(await reader.getitem(...), data)
