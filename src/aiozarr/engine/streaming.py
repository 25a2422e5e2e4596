"""Requests to one store streamed within its byte budget, each burst of answers handed on
as it lands: how every read (one selection or many) holds compressed bytes.

The requests go out in batches of `RequestShape.batch_bytes`. A batch takes its bytes
at once, so batches waiting on each other cannot deadlock, and gives each burst's back
once the burst is handled (decoded), so the next batch can start while the rest of
this one is still landing. A burst is every answer already waiting when one arrives
(e.g. all coalesced ranges of one shard): they are decoded with one thread hop per
codec thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from aiozarr.sizes import batched_by_size
from aiozarr.storage.policy import HeldBytes, RequestShape
from aiozarr.storage.protocol import Buffer, RangeRequest, Store, Version

#: Answers that landed together: (request number, bytes or None if missing, version).
Answers = list[tuple[int, Buffer | None, Version | None]]


async def stream_in_batches(
    store: Store,
    requests: Sequence[RangeRequest],
    sizes: Sequence[int],
    shape: RequestShape,
    on_answers: Callable[[Answers], Awaitable[None]],
) -> None:
    """Send `requests` (of about `sizes` compressed bytes each) to `store` in batches
    within its byte budget; run `on_answers` on each burst that lands."""
    budget = store.runtime.bytes

    async def run_batch(batch: list[int]) -> None:
        held = HeldBytes(budget, await budget.acquire(sum(sizes[i] for i in batch)))

        async def answer(burst: Answers) -> None:
            await on_answers(burst)
            held.release(sum(sizes[i] for i, _, _ in burst))

        try:
            async with (
                anyio.create_task_group() as tg,
                store.stream_versioned_values([requests[i] for i in batch]) as answers,
            ):
                async for first in answers:
                    burst = [(batch[j], d, v) for j, d, v in landed(first, answers)]
                    tg.start_soon(answer, burst)
        finally:
            held.release_all()

    indices = range(len(sizes))
    batches = list(batched_by_size(indices, sizes.__getitem__, shape.batch_bytes(budget.capacity)))
    if len(batches) == 1:
        await run_batch(batches[0])
        return
    async with anyio.create_task_group() as tg:
        for batch in batches:
            tg.start_soon(run_batch, batch)


def landed(first: tuple[int, Buffer | None, Version | None], answers: Any) -> Answers:
    """`first`, an answer of the stream `answers`, and those that landed with it (a
    burst: none waited for)."""
    burst = [first]
    while True:
        try:
            burst.append(answers.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            return burst
