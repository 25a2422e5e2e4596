"""`fan_in`: the answers of many concurrent reads, as one stream, in the order they land.

    async def produce(emit, spawn):
        emit((0, b"inline", None))           # an answer known at once
        spawn(read_and_emit, "k", [1, 2])    # a task that emits its answers as they land

    async with fan_in(produce) as answers:
        async for index, data, version in answers: ...

Every batch read of a store (`storage/policy/batching.py`, a zip archive's members, kerchunk
references) streams through this. Leaving the block, early or by an error, cancels the
tasks still running and waits for them: none outlives the block, and none sends into a
closed stream. A task's failure cancels the others and is raised as itself (not as an
`ExceptionGroup`) out of the block.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
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
    produce: Callable[[Emit, Spawn], Awaitable[None]],
) -> AsyncIterator[anyio.abc.ObjectReceiveStream[Answer]]:
    """The answers `produce` emits, itself or through the tasks it spawns, as a stream
    that ends once `produce` and every task have finished (it holds every answer, so
    emitting never waits)."""
    answers = _Answers()

    async def run() -> None:
        # The batch's tasks are plain asyncio tasks: anyio's task group costs about as
        # much again per task (its own task state, a cancel scope's bookkeeping), paid
        # per backend request; asyncio's cancels the rest on a failure and waits the same.
        try:
            async with asyncio.TaskGroup() as tasks:

                def spawn(function: Callable[..., Awaitable[None]], *args: object) -> None:
                    work = function(*args)
                    try:
                        tasks.create_task(work)  # type: ignore[arg-type]
                    except RuntimeError:  # the group is stopping: the work never starts
                        work.close()  # type: ignore[attr-defined]
                        raise

                await produce(answers.put, spawn)
        finally:
            answers.end()

    # The stream ends only after the task group has stopped every task, so a task
    # finishing as the block is left never sends into a closed stream.
    with unwrap_group():
        async with answers, anyio.create_task_group() as group:
            group.start_soon(run)
            yield answers
            group.cancel_scope.cancel()


class _Answers(anyio.abc.ObjectReceiveStream[Answer]):
    """The answers' stream: a deque, and the receiver's future while it waits.

    anyio's memory stream gives the loop a turn before each answer, and wakes its
    receiver through an event and a cancel scope: a batch of a thousand small answers
    paid that a thousand times. Here one wake-up takes every answer landed by then."""

    def __init__(self) -> None:
        self._landed: deque[Answer] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False  # no more answers will come
        self._closed = False  # the receiver has left

    def put(self, answer: Answer) -> None:
        if self._closed:
            raise anyio.BrokenResourceError("the batch's answers are no longer read")
        self._landed.append(answer)
        self._wake()

    def end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def receive_nowait(self) -> Answer:
        """An answer already landed; `anyio.WouldBlock` if none has yet, `EndOfStream`
        once every answer has been received."""
        if self._landed:
            return self._landed.popleft()
        if self._ended or self._closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> Answer:
        landed = self._landed
        while not landed:
            if self._ended or self._closed:
                raise anyio.EndOfStream
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return landed.popleft()

    async def aclose(self) -> None:
        self._closed = True
        self._landed.clear()
