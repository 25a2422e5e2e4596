"""`HedgeTimer`: when the first copy of a hedged read counts as slow, and then a call
to send another copy (`storage/policy/retry.py` races them). It also sets the read's
timeout, once it fires: a read that ends sooner pays for one timer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aiozarr.storage.policy.budget import Slot
from aiozarr.storage.policy.statistics import InFlight

__all__ = ["CROWD", "CROWD_SHARE", "HedgeTimer"]

#: Other reads slow at once that make a slow read one of a crowd (not hedged): more than
#: a 2 % tail leaves in one batch of reads.
CROWD = 4
#: ... and at least this share of the reads sent about when the slow one was: a 2 % tail
#: of a batch of 400 reads is 8 slow reads at once, each a straggler, alone among its
#: batch (cloud profile, 256 windows over 4 arrays: 15 of 380 data reads +200 ms).
CROWD_SHARE = 0.1


class HedgeTimer:
    """When the first copy of a read counts as slow, and then a call to `send`.

    Slow is: no first byte after `wait_s`, or not done after `whole_s` (either None: no
    such limit). A backend that never says its answer began is judged by `whole_s` alone.

    A slow read is a straggler only if it is slow alone: while `CROWD` or more other
    reads sent half its limit ago or earlier are still at it too (waiting for their
    first byte, or for their last), and they are `CROWD_SHARE` of the reads sent about
    when it was, the slowness is this process's (a busy CPU reads its answers late) or
    the link's, not this read's, and a copy would only add to it; it looks again one
    limit later. The store's tail (2 % of answers on the cloud profile) leaves a read
    alone, or a few among many.
    """

    def __init__(
        self,
        wait_s: float | None,
        whole_s: float | None,
        send: Callable[[], None],
        in_flight: InFlight,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._wait_s, self._whole_s, self._send = wait_s, whole_s, send
        self._in_flight = in_flight
        self._sent = 0.0  # time.monotonic(), the clock `in_flight` shares across loops
        self.slot: Slot | None = None  # the budget slot the read holds
        self._answering = False  # the answer has begun
        self._held = False  # its wait was slow in a crowd
        self._cancelled = False  # the read is over: no more copies
        self._handle: asyncio.Handle | None = None  # the limit's timer, or its last look
        self._due: float | None = None  # when the body's limit is up, on the loop's clock
        self._guarded: tuple[asyncio.Timeout, float] | None = None  # see `guard`

    def start(self, slot: Slot | None = None) -> None:
        self.slot = slot
        self._sent = time.monotonic()
        self._in_flight.add(self, self._sent)
        first_limit = self._wait_s if self._wait_s is not None else self._whole_s
        if first_limit is not None:
            self._handle = self._loop.call_later(first_limit, self._fire)

    def fires_within(self, seconds: float) -> bool:
        """Whether the timer started fires before `seconds` have passed."""
        first_limit = self._wait_s if self._wait_s is not None else self._whole_s
        return first_limit is not None and first_limit < seconds

    def guard(self, scope: asyncio.Timeout | None, seconds: float) -> asyncio.Timeout | None:
        """Set `scope` (entered by the read, never expiring yet) to expire `seconds` from
        now once the timer fires or is dropped: nearly every read ends sooner, and pays
        for one timer, not two (None: the read is over, forget it)."""
        self._guarded = None if scope is None else (scope, self._loop.time() + seconds)
        return scope

    def _arm(self) -> None:
        guarded, self._guarded = self._guarded, None
        if guarded is not None:
            guarded[0].reschedule(guarded[1])

    def answer_began(self) -> None:
        self._answering = True
        self._in_flight.began(self, time.monotonic())
        handle = self._handle
        if handle is None:  # fired already (or never started)
            return
        if self._whole_s is None:
            handle.cancel()
            self._handle = None
            self._arm()
            return
        # A read whose wait a crowd held is late through no fault of its own: its body
        # gets the whole limit from now (a crowd still reading then holds it again), so
        # a body trickling alone after the crowd has gone is raced all the same.
        now = time.monotonic()
        since = now if self._held else self._sent
        due = self._loop.time() + max(0.0, since + self._whole_s - now)
        # A timer's handle has `when`, a look's has not (uvloop's timers are not asyncio's)
        when = getattr(handle, "when", None)
        if when is not None and when() <= due:
            # The timer set to fire sooner looks again then: most reads end before it,
            # so a read pays for one timer, not a second one and a cancelled first.
            self._due = due
            return
        handle.cancel()
        self._arm()
        self._handle = self._loop.call_at(due, self._fire)

    def cancel(self) -> None:
        self._cancelled = True
        self._send = _no_copy  # nor a reference back to the read
        self._in_flight.discard(self)
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._arm()
        due, self._due = self._due, None
        if due is not None and due > self._loop.time():  # the body's limit is later
            self._handle = self._loop.call_at(due, self._fire)
            return
        # One more look, after what this turn of the loop has woken: on a busy process
        # the answer may be in already, its task not yet run to say so.
        self._handle = self._loop.call_soon(self._send_now)

    def again(self) -> None:
        """The copy sent has failed: if the read is still slow one limit from now, send
        another (a copy meets the store's failures as often as any read)."""
        limit = self._limit()
        if self._handle is None and limit is not None and not self._cancelled:
            self._handle = self._loop.call_later(limit, self._fire)

    def _limit(self) -> float | None:
        waiting = not self._answering and self._wait_s is not None
        return self._wait_s if waiting else self._whole_s

    def _send_now(self) -> None:
        self._handle = None
        waiting = not self._answering and self._wait_s is not None
        limit = self._limit()
        assert limit is not None  # the limit that fired
        # The others as they were half a limit ago: a crowd whose answers are coming in
        # now is still a crowd (they are noticed one turn of the loop after another).
        since = time.monotonic() - limit / 2
        if self._in_flight.crowded(self, since, waiting=waiting, crowd=CROWD, share=CROWD_SHARE):
            self._held = True
            self._handle = self._loop.call_later(limit, self._fire)
            return
        self._send()


def _no_copy() -> None:
    """What a cancelled timer sends."""
