"""`fan_in`: the answers of many concurrent reads, as one stream, in the order they land.

    async def produce(emit, spawn):
        emit((0, b"inline", None))           # an answer known at once
        spawn(read_and_emit, "k", [1, 2])    # a task that emits its answers as they land

    async with fan_in(n, produce) as answers:
        async for index, data, version in answers: ...

Every batch read of a store (`storage/policy/batching.py`, a zip archive's members, kerchunk
references) streams through this. Leaving the block, early or by an error, cancels the
tasks still running and waits for them: none outlives the block, and none sends into a
closed stream. A task's failure cancels the others and is raised as itself (not as an
`ExceptionGroup`) out of the block.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.abc

from aiozarr.errors import unwrap_group
from aiozarr.storage.policy.backend import Answer

__all__ = ["Emit", "Spawn", "fan_in"]

#: Hands one answer to the stream (never waits: the stream holds every answer).
Emit = Callable[[Answer], None]
#: Starts `function(*args)` as a task of the batch.
Spawn = Callable[..., None]


@contextlib.asynccontextmanager
async def fan_in(
    capacity: int, produce: Callable[[Emit, Spawn], Awaitable[None]]
) -> AsyncIterator[anyio.abc.ObjectReceiveStream[Answer]]:
    """The answers `produce` emits, itself or through the tasks it spawns, as a stream
    that ends once `produce` and every task have finished. `capacity`: the most answers
    there will be (the stream buffers them all, so emitting never waits)."""
    send, receive = anyio.create_memory_object_stream[Answer](max_buffer_size=max(capacity, 1))

    async def run() -> None:
        async with send, anyio.create_task_group() as tasks:
            await produce(send.send_nowait, tasks.start_soon)

    # The stream closes only after the task group has stopped every task, so a task
    # finishing as the block is left never sends into a closed stream.
    with unwrap_group():
        async with receive, anyio.create_task_group() as group:
            group.start_soon(run)
            yield receive
            group.cancel_scope.cancel()
