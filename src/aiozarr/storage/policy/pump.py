"""`RangePump`: the first tries of a batch's single ranges, sent from the batch's task.

    await RangePump(store, sender, requests, settings, parts, emit, hand_on).run(indices)

Read one by one, a batch of small ranges (a shard index per shard, an inner chunk per
range) is a task per range, each a stack of coroutines: the request policy, its timeout
scope, the backend's two awaits. That was most of the event loop's CPU per request.
Here the batch's one task takes budget slots as they come free, and each range is sent
by the backend's `RangeSender` (obstore's futures and their callbacks, no task); the
answers are emitted from the callbacks, and each one answered passes its slot to the
next range at once.

The policy of one try is `retry.run_request`'s, kept: one budget slot per request, taken
in turn behind other waiters, and given back with the budget told how it went; at most
`parts_per_object` requests of one key at once; a timeout per request; hedging by
`HedgeTimer`'s rules (slow: no first byte after the wait limit, or not done after the
whole limit; not while a crowd of others is slow too; a copy in the straggler's slot;
the first answer wins, the other is cancelled); the statistics. Two timers serve the
whole batch, one for the timeouts and one for hedging, each set for the earliest moment
a read could be late, looking at every read in flight when it fires: a read that ends
on time (nearly all) costs no timer. A hedged read is entered in the store's `InFlight`,
as every hedged read is: the crowd is found among all of them, whatever batch, task or
thread sent them.

A try that fails is handed on, with when it began, to `hand_on`, which goes on (in a
task of its own: failures are rare) as `run_request` would have after it: the retries,
their backoff and the final error are the policy's. Leaving `run` (done,
failed or cancelled) cancels what is still in flight and gives its slots back.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence

from aiozarr import config
from aiozarr.storage.policy import ranges, retry
from aiozarr.storage.policy.backend import (
    Answer,
    RangeListener,
    RangeRequest,
    RangeSend,
    RangeSender,
    ReadBackend,
    Versioned,
)
from aiozarr.storage.policy.budget import Slot
from aiozarr.storage.policy.hedge_timer import CROWD, CROWD_SHARE

__all__ = ["HandOn", "RangePump"]

# Sends between fresh looks at the hedge delays (recent latencies move slowly).
_DELAYS_KEPT_FOR = 64

#: Takes over request `index` after its first try, begun at the time (on
#: `time.monotonic()`) in the slot, failed with the exception.
HandOn = Callable[[int, Exception, float, Slot], None]


class RangePump:
    """Sends single-range requests of one batch, each answered into `emit` as it lands.

    `requests[i]` for each index given to `run` must be a range the `sender` `sends`.
    """

    def __init__(
        self,
        store: ReadBackend,
        sender: RangeSender,
        requests: Sequence[RangeRequest],
        settings: config.Config,
        parts_per_object: int,
        emit: Callable[[Answer], None],
        hand_on: HandOn,
    ) -> None:
        self._sender, self._requests, self._settings = sender, requests, settings
        self._runtime = runtime = store.runtime
        self._budget, self._statistics = runtime.requests, runtime.statistics
        self._parts_per_object = parts_per_object
        self._emit, self._hand_on = emit, hand_on
        self._hedging = settings.hedge_reads and store.capabilities.hedge_reads
        self._queue: deque[int] = deque()  # to send, in order
        self._parked: dict[str, deque[int]] = {}  # to send once their key has a part free
        self._parts: dict[str, int] = {}  # requests of each key in flight
        self._reads: dict[int, _Read] = {}  # in flight, in the order sent
        self._left = 0  # requests not yet answered or handed on
        self._starved = False  # a request waits for a slot no callback could take
        self._error: BaseException | None = None  # what ends the batch
        self._wake: asyncio.Future[None] | None = None  # the task's, while it waits
        self._deadlines: asyncio.TimerHandle | None = None  # the timeouts' one timer
        self._hedge_at: asyncio.TimerHandle | None = None  # hedging's one timer
        self._hedge_at_due = math.inf  # when it fires, on `time.monotonic()`
        self._delays: dict[tuple[int, bool], tuple[float | None, float | None]] = {}
        self._sent = 0
        self._loop = asyncio.get_running_loop()

    async def run(self, indices: Sequence[int]) -> None:
        """Send `requests[indices]` and return once each is answered or handed on."""
        self._queue.extend(indices)
        self._left = len(indices)
        try:
            self._fill()
            while self._left:
                if self._error is not None:
                    raise self._error
                if self._starved:  # wait in turn for a slot: then the callbacks go on
                    slot = await self._budget.acquire()
                    self._starved = False
                    if self._error is not None:
                        self._budget.release()
                        raise self._error
                    self._send_next(slot)
                    self._fill()
                    continue
                self._wake = self._loop.create_future()
                await self._wake
                self._wake = None
            if self._error is not None:
                raise self._error
        finally:
            self._stop()

    # -- sending -----------------------------------------------------------------------

    def _fill(self) -> None:
        """Send queued requests while the budget has slots free."""
        while self._queue:
            slot = self._budget.take_free()
            if slot is None:
                self._starved = True
                self._nudge()
                return
            self._send_next(slot)

    def _send_next(self, slot: Slot) -> None:
        """Send the next queued request whose key has a part free, in `slot`."""
        queue, requests, parts = self._queue, self._requests, self._parts
        while queue:
            index = queue.popleft()
            key = requests[index].key
            if parts.get(key, 0) >= self._parts_per_object:
                self._parked.setdefault(key, deque()).append(index)
                continue
            parts[key] = parts.get(key, 0) + 1
            self._send(index, key, slot)
            return
        self._budget.release()  # every request left waits for a part of its key

    def _send(self, index: int, key: str, slot: Slot) -> None:
        request = self._requests[index]
        byte_range = request.byte_range
        assert byte_range is not None
        read = self._reads[index] = _Read(self, index, key, ranges.requested_bytes(byte_range))
        read.slot = slot
        self._statistics.count("requests")
        settings = self._settings
        timeout = min(retry.request_timeout_s(read.nbytes, settings), settings.retry_deadline_s)
        read.deadline = read.sent + max(0.0, timeout)
        if self._deadlines is None:
            self._deadlines = self._loop.call_at(self._on_loop(read.deadline), self._expire)
        if self._hedging:
            read.wait_s, read.whole_s = self._hedge_delays(read.nbytes)
            if (due := read.due()) is not None:
                self._statistics.in_flight.add(read, read.sent)
                self._hedge_by(due)
        read.send = self._send_range(index, read)

    def _hedge_delays(self, nbytes: int | None) -> tuple[float | None, float | None]:
        """`retry.hedge_delays` for reads of about `nbytes`, looked at afresh now and then."""
        self._sent += 1
        if self._sent % _DELAYS_KEPT_FOR == 0:
            self._delays.clear()
        large = nbytes is None or nbytes > self._settings.hedge_large_bytes
        size_class = (-1 if nbytes is None else nbytes.bit_length() // 2, large)
        delays = self._delays.get(size_class)
        if delays is None:
            delays = retry.hedge_delays(self._statistics, nbytes, self._settings)
            self._delays[size_class] = delays
        return delays

    def _on_loop(self, monotonic: float) -> float:
        """A `time.monotonic()` time on the loop's clock."""
        return self._loop.time() + monotonic - time.monotonic()

    # -- answers -----------------------------------------------------------------------

    def _send_range(self, index: int, listener: RangeListener) -> RangeSend | None:
        """Send a copy of request `index` to `listener`."""
        byte_range = self._requests[index].byte_range
        assert byte_range is not None
        try:
            return self._sender.send_range(self._requests[index].key, byte_range, listener)
        except Exception as exc:  # refused before it was sent (the process forked)
            self._loop.call_soon(listener.done, exc)  # as if it came back: no recursion
            return None

    def _done(self, read: _Read, answer: Versioned | BaseException, copy: _Copy | None) -> None:
        """A copy of `read` (`copy`; None: the first) came back with `answer`."""
        if read.over:
            return
        try:
            if isinstance(answer, BaseException):
                if read.racing() and isinstance(answer, Exception):  # another may answer
                    slot, key = read.slot, read.key
                    assert slot is not None
                    retry.try_failed(self._runtime, slot, answer, "read", key, read.nbytes)
                    if copy is not None and retry.classify(answer).retryable:
                        read.copy_failed()
                    return
                self._failed(read, answer)  # the last copy: the failure is what it says
                return
            if copy is not None:
                self._statistics.count("hedges_won")
            self._answered(read, answer, read.began_at if copy is None else copy.first_byte_at)
        except BaseException as exc:
            self._fail(exc)

    def _answered(self, read: _Read, answer: Versioned, first_byte_at: float | None) -> None:
        data, version = answer
        received = memoryview(data).nbytes
        if read.nbytes is not None and received > read.nbytes:
            ranges.refuse_long(self._requests[read.index].byte_range, data)
        seconds = time.monotonic() - read.sent
        statistics = self._statistics
        retry.read_succeeded(statistics, read.nbytes, received, seconds, first_byte_at, read.sent)
        if retry.log.isEnabledFor(logging.DEBUG):
            retry.log.debug(
                "read %r (%s bytes): ok in %.1f ms", read.key, read.nbytes, seconds * 1000
            )
        self._settle(read, succeeded=True)
        self._emit((read.index, data, version))

    def _failed(self, read: _Read, error: BaseException) -> None:
        """The last copy of `read` in flight failed with `error`: hand it on."""
        self._settle(read, succeeded=False)
        if not isinstance(error, Exception):  # a cancellation, never the backend's
            raise error
        assert read.slot is not None
        self._hand_on(read.index, error, read.sent, read.slot)

    def _settle(self, read: _Read, *, succeeded: bool) -> None:
        """`read` is over: its copies stopped, its slot and part free for the next."""
        read.end()
        del self._reads[read.index]
        self._left -= 1
        key = read.key
        self._parts[key] -= 1
        parked = self._parked.get(key)
        queue = self._queue
        if parked:
            queue.appendleft(parked.popleft())
        # Its slot goes to the next request, and one more where the limit has grown.
        taken, slot = self._budget.pass_on(succeeded, min(len(queue), 2))
        for _ in range(taken):
            self._send_next(slot)
        if queue and not taken:  # others wait for slots too: wait in turn
            self._starved = True
            self._nudge()
        elif not self._left:
            self._nudge()

    def _expire(self) -> None:
        """The batch's timer: reads past their timeout fail as timed out."""
        self._deadlines = None
        now = time.monotonic()
        try:
            for read in [r for r in self._reads.values() if r.deadline <= now]:
                self._statistics.count("timeouts")
                timeout = read.deadline - read.sent
                self._failed(
                    read,
                    retry.RequestTimeoutError(
                        f"cannot read {self._runtime.key_in(read.key)}: no answer within "
                        f"{timeout:.1f} s"
                    ),
                )
        except BaseException as exc:
            self._fail(exc)
        if self._reads and self._error is None:
            due = min(read.deadline for read in self._reads.values())
            self._deadlines = self._loop.call_at(self._on_loop(due), self._expire)

    # -- hedging -----------------------------------------------------------------------

    def _hedge_by(self, due: float) -> None:
        """Look for slow reads at `due` (`time.monotonic()`) at the latest."""
        timer = self._hedge_at
        if timer is not None:
            if self._hedge_at_due <= due:
                return
            timer.cancel()
        self._hedge_at_due = due
        self._hedge_at = self._loop.call_at(self._on_loop(due), self._hedge_due)

    def _hedge_due(self) -> None:
        # One more turn first: on a busy loop an answer woken with the timer still
        # counts as on time.
        self._hedge_at = None
        self._loop.call_soon(self._look)

    def _look(self) -> None:
        """Send a copy of each read that is slow alone; look again when the next may be."""
        try:
            self._delays.clear()
            now = time.monotonic()
            next_due = math.inf
            in_flight = self._statistics.in_flight
            for read in list(self._reads.values()):
                due = read.due()
                if due is None:
                    continue
                if due <= now:
                    limit, waiting = read.limit()
                    assert limit is not None
                    # The others as they were half a limit ago: a crowd whose answers
                    # are coming in now is still a crowd.
                    since = now - limit / 2
                    if in_flight.crowded(
                        read, since, waiting=waiting, crowd=CROWD, share=CROWD_SHARE
                    ):
                        read.held = True
                        read.look_at = now + limit
                    else:
                        read.look_at = math.inf  # one copy, unless it fails
                        read.hedge()
                    due = read.look_at
                next_due = min(next_due, due)
            if next_due < math.inf and self._error is None:
                self._hedge_by(next_due)
        except BaseException as exc:
            self._fail(exc)

    def _fail(self, error: BaseException) -> None:
        """End the batch with `error` (raised by the task)."""
        if self._error is None:
            self._error = error
        self._nudge()

    def _nudge(self) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def _stop(self) -> None:
        """Cancel what is in flight, give its slots back."""
        for timer in (self._deadlines, self._hedge_at):
            if timer is not None:
                timer.cancel()
        self._deadlines = self._hedge_at = None
        reads, self._reads = self._reads, {}
        for read in reads.values():
            read.end()
            self._budget.release()
        self._queue.clear()
        self._parked.clear()


class _Read:
    """One request of a `RangePump` in flight, and the listener of its first copy: its
    slot, when it was sent and must be done, how slow it may be, and any hedges."""

    __slots__ = (
        "began_at",
        "deadline",
        "hedges",
        "held",
        "index",
        "key",
        "look_at",
        "nbytes",
        "over",
        "pump",
        "send",
        "sent",
        "slot",
        "wait_s",
        "whole_s",
    )

    def __init__(self, pump: RangePump, index: int, key: str, nbytes: int | None) -> None:
        self.pump, self.index, self.key, self.nbytes = pump, index, key, nbytes
        self.sent = time.monotonic()
        self.deadline = 0.0
        self.slot: Slot | None = None
        self.send: RangeSend | None = None  # the first copy, while in flight
        self.hedges: list[_Copy] | None = None
        self.over = False
        # Hedging: the limits on its wait and its whole time (None: none), when its
        # first copy's answer began, whether a crowd held it, and when to look at it
        # next if not at its limit (inf: never; it has a copy out).
        self.wait_s: float | None = None
        self.whole_s: float | None = None
        self.began_at: float | None = None
        self.held = False
        self.look_at: float | None = None

    # -- the first copy's listener -------------------------------------------------------

    def began(self) -> None:
        if self.over or self.began_at is not None:
            return
        pump = self.pump
        self.began_at = now = time.monotonic()
        statistics = pump._statistics
        statistics.first_bytes.add(None, now - self.sent)
        if self.wait_s is not None or self.whole_s is not None:  # entered in `InFlight`
            statistics.in_flight.began(self, now)
        if self.look_at is not None and self.look_at < math.inf:
            self.look_at = None  # held while waiting: the body's limit counts now
        if pump._hedging and (due := self.due()) is not None:
            pump._hedge_by(due)

    def done(self, answer: Versioned | BaseException) -> None:
        self.send = None
        self.pump._done(self, answer, None)

    # -- hedging -----------------------------------------------------------------------

    def limit(self) -> tuple[float | None, bool]:
        """The limit it is held to now, and whether that is the wait for a first byte."""
        waiting = self.began_at is None and self.wait_s is not None
        return (self.wait_s if waiting else self.whole_s), waiting

    def due(self) -> float | None:
        """When it counts as slow (`time.monotonic()`; None: never)."""
        if self.look_at is not None:
            return self.look_at
        limit, waiting = self.limit()
        if limit is None:
            return None
        # A read whose wait a crowd held is late through no fault of its own: its body
        # gets the whole limit from when it began.
        since = self.began_at if self.held and not waiting else self.sent
        assert since is not None
        return since + limit

    def hedge(self) -> None:
        """It is slow alone: send a copy, if the store's hedges allow one more."""
        pump = self.pump
        if self.over or not retry.may_hedge(pump._statistics, pump._settings):
            return
        pump._statistics.count("hedges_issued")
        pump._statistics.count("requests")
        copy = _Copy(self)
        self.hedges = [*(self.hedges or ()), copy]
        copy.send = pump._send_range(self.index, copy)

    def copy_failed(self) -> None:
        """A copy failed: if the read is still slow one limit from now, send another (a
        copy meets the store's failures as often as any read)."""
        limit, _ = self.limit()
        if limit is not None and not self.over:
            self.look_at = time.monotonic() + limit
            self.pump._hedge_by(self.look_at)

    def racing(self) -> bool:
        """Whether a copy of it is still in flight."""
        return self.send is not None or any(c.send is not None for c in self.hedges or ())

    def end(self) -> None:
        self.over = True
        if self.wait_s is not None or self.whole_s is not None:
            self.pump._statistics.in_flight.discard(self)
        if self.send is not None:
            self.send.cancel()
            self.send = None
        for copy in self.hedges or ():
            copy.cancel()


class _Copy:
    """A hedge of a `_Read`, and the listener of its answer."""

    __slots__ = ("first_byte_at", "read", "send", "sent")

    def __init__(self, read: _Read) -> None:
        self.read = read
        self.sent = time.monotonic()
        self.send: RangeSend | None = None
        self.first_byte_at: float | None = None

    def cancel(self) -> None:
        if self.send is not None:
            self.send.cancel()
            self.send = None

    def began(self) -> None:
        if self.read.over or self.first_byte_at is not None:
            return
        self.first_byte_at = now = time.monotonic()
        self.read.pump._statistics.first_bytes.add(None, now - self.sent)

    def done(self, answer: Versioned | BaseException) -> None:
        self.send = None
        self.read.pump._done(self.read, answer, self)
