"""How one store request runs: a budget slot, a timeout, retries and (reads) hedging.

    request = Request("read", key, lambda: store.read(key, byte_range, None), 100, True)
    data = await run_request(store.runtime, request, config.get())

Every store operation that is safe to repeat goes through `run_request`, the one place
where aiozarr retries (obstore's own retries are switched off, so they never multiply):

- each attempt holds one slot of the store's `RequestBudget` (`runtime.requests`) and
  runs under a timeout of `request_timeout_s + nbytes / request_timeout_min_bytes_per_s`;
- a transient failure (`classify`) is retried after a full-jitter exponential backoff,
  or after the wait the server asked for (`Retry-After`, where the backend hears it:
  `TransientStoreError.retry_after_s`) if longer, up to `retry_attempts` tries and
  `retry_deadline_s` in all; a 503 / 429 also halves the budget's limit;
- a hedged read whose answer has not begun long after recent answers did (the backend
  says when through `answer_began`), or that runs far longer than recent reads of its
  size, is sent again, and the first answer wins (the other is cancelled);
- the `StoreError` raised on giving up names the key, the number of attempts and the
  last error;
- what happened (requests, bytes, retries, throttles, timeouts, hedges, read latencies)
  is counted in the store's `RequestStats` (`runtime.statistics`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio

from aiozarr import config
from aiozarr.errors import StoreError
from aiozarr.storage.policy.budget import Slot
from aiozarr.storage.policy.hedge_timer import HedgeTimer as _HedgeTimer
from aiozarr.storage.policy.runtime import StoreRuntime
from aiozarr.storage.policy.statistics import RequestStats

#: Debug lines per request: action, key, size, outcome, time. Never credentials.
log = logging.getLogger("aiozarr.store")

__all__ = [
    "Failure",
    "Request",
    "RequestTimeoutError",
    "RetryPolicy",
    "ShortReadError",
    "TransientStoreError",
    "answer_began",
    "classify",
    "hedge_delays",
    "may_hedge",
    "read_succeeded",
    "request_timeout_s",
    "run_request",
    "try_failed",
]

T = TypeVar("T")

# Statuses worth another try: request timeout, throttling, server-side failures.
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Bodies at least this large tell how fast the link moves one answer (`Link`).
_BODY_SAMPLE_BYTES = 1 << 20
# A read not begun after this many times the p95 of its size class's whole reads is
# slow. Not once: that line and the p95 of waits would each take their 5 % of reads (at
# 20 ms, single elements: 15 copies per 100 reads, none won). Twice leaves the waits'
# line in charge wherever waits are alike across sizes, and takes over where large
# reads queued behind a busy link lifted it far above what small reads take (cloud,
# 256 windows over 4 arrays: index reads of 61 ms held to 145-250 ms waits, their +200
# ms tail not hedged).
_WHOLE_WAIT_MULTIPLE = 2.0
# Hedges allowed beyond `hedge_max_fraction` of requests, so a short batch can hedge too.
_HEDGE_BURST = 10
# Until the p95 of first-byte waits is known, a wait this many times their median is
# slow.
_COLD_WAIT_MULTIPLE = 2.0


class TransientStoreError(StoreError):
    """A failure that may not happen again: retried by `run_request`, not sooner than
    `retry_after_s` where the server said when (`Retry-After`)."""

    retry_after_s: float | None = None

    def __init__(self, *args: object, retry_after_s: float | None = None) -> None:
        super().__init__(*args)
        self.retry_after_s = retry_after_s


class ShortReadError(TransientStoreError):
    """A body shorter than the range asked for, although the value is long enough."""


class RequestTimeoutError(TransientStoreError):
    """No answer within the request's timeout."""


@dataclass(frozen=True, slots=True)
class Failure:
    """What to do about an exception: retry it? does it ask us to slow down?"""

    retryable: bool
    throttled: bool = False
    #: How long the server asked to wait before the next try (`Retry-After`), if it did.
    retry_after_s: float | None = None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def classify(exc: BaseException) -> Failure:
    """Whether `exc` (or what caused it) is transient, and whether it is throttling.

    Retryable: HTTP 408/429/500/502/503/504, connection errors and resets, truncated
    bodies, timeouts, short reads. Not: missing keys (404), refusals (401/403), bad
    requests (400), invalid keys, read-only stores, anything unknown.
    """
    for cause in _chain(exc):
        if isinstance(cause, TransientStoreError):
            return Failure(True, retry_after_s=cause.retry_after_s)
        if isinstance(cause, TimeoutError | ConnectionError):
            return Failure(True)
        for read in _FAILURE_READERS:
            if (failure := read(cause)) is not None:
                return failure
    return Failure(False)


# How a backend's client library says what went wrong (obstore's: registered by
# `backends/obstore_errors.py`); each answers None for exceptions not its library's.
_FAILURE_READERS: list[Callable[[BaseException], Failure | None]] = []


def read_failures_with(reader: Callable[[BaseException], Failure | None]) -> None:
    """Classify the exceptions of a backend's client library with `reader` too."""
    if reader not in _FAILURE_READERS:
        _FAILURE_READERS.append(reader)


@dataclass(frozen=True, slots=True)
class Request(Generic[T]):
    """One backend request that is safe to repeat, as the request policy runs it.

    `action` and `key` name it in errors and logs ("cannot read 'c/0' ..."); `operation`
    sends it once; `nbytes` sizes its timeout (and groups its latency with similar reads
    for hedging); `hedge` lets a slow try be sent again (reads only).
    """

    action: str
    key: str
    operation: Callable[[], Awaitable[T]]
    nbytes: int | None = None
    hedge: bool = False


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded attempts with exponential backoff, full jitter, and a total deadline."""

    attempts: int
    base_delay_s: float
    max_delay_s: float
    deadline_s: float

    @classmethod
    def from_config(cls, s: config.Config) -> RetryPolicy:
        """The policy of the `retry_*` settings."""
        return cls(
            max(1, s.retry_attempts), s.retry_base_delay_s, s.retry_max_delay_s, s.retry_deadline_s
        )

    def delay_s(self, retry: int) -> float:
        """How long to wait before retry number `retry` (0 for the first retry)."""
        cap = min(self.max_delay_s, self.base_delay_s * 2.0 ** min(retry, 62))
        return random.uniform(0.0, cap)


def request_timeout_s(nbytes: int | None, s: config.Config) -> float:
    """The timeout of one request for `nbytes` (unknown: `max_request_bytes`)."""
    size = s.max_request_bytes if nbytes is None else nbytes
    return s.request_timeout_s + size / s.request_timeout_min_bytes_per_s


async def run_request(
    runtime: StoreRuntime,
    request: Request[T],
    settings: config.Config,
    *,
    failed: Exception | None = None,
    started: float | None = None,
) -> T:
    """Run the idempotent `request` (one backend request) with the store's policy, as
    `settings` (resolved once by the store operation it is part of) set it.

    A failure that `classify` says is final is raised as itself (a missing key stays
    `FileNotFoundError`, a refusal stays the backend's `StoreError`). `failed`: how a
    first try, made elsewhere and begun at `started` (`storage/policy/pump.py`), ended;
    the request goes on from there as if this had made it.
    """
    started = time.monotonic() if started is None else started
    attempt = 0
    cause: Exception | None = None  # what the error reports: the last real failure
    hedged = request.hedge and settings.hedge_reads
    while True:
        attempt += 1
        remaining = settings.retry_deadline_s - (time.monotonic() - started)
        if failed is None:
            try:
                if hedged:
                    return await _hedged(runtime, request, remaining, settings)
                return await _attempt(runtime, request, remaining, settings)
            except Exception as exc:
                failed = exc
        exc, failed = failed, None
        failure = classify(exc)
        if not failure.retryable:
            raise exc
        policy = RetryPolicy.from_config(settings)  # only once a try has failed
        # A try cut short by the overall deadline says nothing about the store: keep
        # the failure before it (a 503, a reset) as the reason for giving up.
        clipped = isinstance(exc, RequestTimeoutError) and remaining < request_timeout_s(
            request.nbytes, settings
        )
        if cause is None or not clipped:
            cause = exc
        delay = max(policy.delay_s(attempt - 1), failure.retry_after_s or 0.0)
        elapsed = time.monotonic() - started
        if attempt >= policy.attempts or elapsed + delay >= policy.deadline_s:
            runtime.statistics.count("gave_up")
            error = _gave_up(request, cause, attempt, elapsed)
            log.warning("%s", error)
            raise error from cause
        runtime.statistics.count("retries")
        log.info(
            "%s %r: retry %d in %.2f s after %s: %s",
            request.action,
            request.key,
            attempt,
            delay,
            type(exc).__name__,
            exc,
        )
        await anyio.sleep(delay)


def _gave_up(request: Request[Any], exc: Exception, attempts: int, elapsed: float) -> StoreError:
    action, key = request.action, request.key
    cause = (
        str(exc)
        if isinstance(exc, StoreError)
        else (f"cannot {action} {key!r}: {type(exc).__name__}: {exc}")
    )
    if repr(key) not in cause:
        cause = f"cannot {action} {key!r}: {cause}"
    tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
    return StoreError(f"{cause} (gave up after {tries} in {elapsed:.2f} s)")


async def _attempt(
    runtime: StoreRuntime,
    request: Request[T],
    remaining_s: float,
    settings: config.Config,
    timer: _HedgeTimer | None = None,
    lent: Slot | None = None,
) -> T:
    """One try: a budget slot, a timeout, the budget told how it went and the
    statistics what happened.

    A hedge `timer` starts once the slot is held: time spent queueing for the budget is
    not the request's latency. It hears when the backend says the answer has begun.
    `lent`: the slot of the straggler this try is a copy of, used instead of a slot of
    its own (see `_hedged`).
    """
    if lent is not None:
        return await _send(runtime, request, remaining_s, settings, timer, lent)
    budget, task = runtime.requests, asyncio.current_task()
    assert task is not None
    slot = await budget.hold(task)
    try:
        return await _send(runtime, request, remaining_s, settings, timer, slot)
    finally:
        budget.let_go(task)


async def _send(
    runtime: StoreRuntime,
    request: Request[T],
    remaining_s: float,
    settings: config.Config,
    timer: _HedgeTimer | None,
    slot: Slot,
) -> T:
    """The try of `_attempt`, its budget slot held."""
    action, key, nbytes = request.action, request.key, request.nbytes
    budget, statistics = runtime.requests, runtime.statistics
    timeout = max(0.0, min(request_timeout_s(nbytes, settings), remaining_s))
    statistics.count("requests")
    began = time.monotonic()
    scope = asyncio.timeout(timeout)
    if timer is not None:
        timer.start(slot)
        if timer.fires_within(timeout):  # the hedge timer sets the timeout if it fires
            scope = timer.guard(asyncio.timeout(None), timeout)
    first_byte = _FirstByte(statistics, began, timer)
    listening = _answer_began.set(first_byte)
    try:
        async with scope:
            result = await request.operation()
    except TimeoutError:
        statistics.count("timeouts")
        raise RequestTimeoutError(
            f"cannot {action} {runtime.key_in(key)}: no answer within {timeout:.1f} s"
        ) from None
    except Exception as exc:
        try_failed(runtime, slot, exc, action, key, nbytes)
        raise
    finally:
        _answer_began.reset(listening)
        if timer is not None:
            timer.guard(None, 0.0)
    budget.succeeded()
    seconds = time.monotonic() - began
    if action == "read":
        received = 0 if result is None else _buffer_size(result)
        read_succeeded(statistics, nbytes, received, seconds, first_byte.at, began)
    else:
        statistics.finished(action, nbytes, 0, seconds)
    if log.isEnabledFor(logging.DEBUG):
        outcome = "missing" if result is None else "ok"
        log.debug(
            "%s %r %s: %s in %.1f ms", action, key, _size_text(nbytes), outcome, seconds * 1000
        )
    return result


def try_failed(
    runtime: StoreRuntime, slot: Slot, exc: Exception, action: str, key: str, nbytes: int | None
) -> None:
    """What the budget and statistics learn from a try (holding `slot`) to `action` `key`
    that failed with `exc`: a throttling answer halves the budget."""
    if classify(exc).throttled:
        runtime.requests.throttled(slot)
        runtime.statistics.count("throttled")
    runtime.statistics.count("errors")
    log.debug("%s %r %s: %s: %s", action, key, _size_text(nbytes), type(exc).__name__, exc)


def read_succeeded(
    statistics: RequestStats,
    nbytes: int | None,
    received: int,
    seconds: float,
    first_byte_at: float | None,
    began: float,
) -> None:
    """Count a read that moved `received` bytes in `seconds` (sent at `began`, its
    first byte at `first_byte_at`); a large one also tells how fast bodies come."""
    statistics.finished("read", nbytes, received, seconds)
    if received >= _BODY_SAMPLE_BYTES and first_byte_at is not None:
        body_s = began + seconds - first_byte_at
        statistics.body_times.add(None, body_s * (1 << 20) / received)


def answer_began() -> None:
    """Say that the request running in this context has its answer's first byte (the
    headers are in): what is left is the body.

    Backends that can tell (`ObjectStore`) call this; hedging learns from it how long
    answers take to begin, and a read whose body is flowing is raced only once it runs
    past its peers' whole time. Outside a request it does nothing.
    """
    listener = _answer_began.get()
    if listener is not None:
        listener()


class _FirstByte:
    """Records one try's wait for its first byte, once, and tells its hedge timer."""

    __slots__ = ("_began", "_statistics", "_timer", "at")

    def __init__(self, statistics: RequestStats, began: float, timer: _HedgeTimer | None) -> None:
        self._statistics, self._began, self._timer = statistics, began, timer
        self.at: float | None = None  # when the first byte came

    def __call__(self) -> None:
        if self.at is not None:  # a fallback inside one try may begin a second answer
            return
        self.at = time.monotonic()
        self._statistics.first_bytes.add(None, self.at - self._began)
        if self._timer is not None:
            self._timer.answer_began()


#: The `_FirstByte` of the try running in this context (set by `_attempt`): the backend
#: is deep in its own calls when the headers come, and has no other way back here.
_answer_began: contextvars.ContextVar[_FirstByte | None] = contextvars.ContextVar(
    "aiozarr_answer_began", default=None
)


def _size_text(nbytes: int | None) -> str:
    return "(whole)" if nbytes is None else f"({nbytes} bytes)"


def _buffer_size(result: Any) -> int:
    if isinstance(result, tuple):  # a read's (answer, version)
        result = result[0]
    try:
        return memoryview(result).nbytes
    except TypeError:  # several answers (a multi-range read)
        return sum(memoryview(part).nbytes for part in result)


def may_hedge(statistics: RequestStats, settings: config.Config) -> bool:
    counts = statistics.counts()
    allowed = _HEDGE_BURST + settings.hedge_max_fraction * counts["requests"]
    return counts["hedges_issued"] < allowed


def hedge_delays(
    statistics: RequestStats, nbytes: int | None, settings: config.Config
) -> tuple[float | None, float | None]:
    """How long a read may wait for its first byte, and take in all, before a second
    copy is sent (None: no limit known).

    Each is `hedge_p95_multiple` times the p95 of recent reads (the wait: of every
    size; the whole read: of its size class), at least `hedge_min_delay_s`. Until 16
    waits are known, the limit on the wait is twice their median: the first reads of a
    process, a notebook's first drill through a dataset, are hedged too, even after a
    slow first answer. A read not begun after twice the whole limit of its size is slow
    too (`_WHOLE_WAIT_MULTIPLE`). A read over `hedge_large_bytes`, or of a whole value
    (its size unknown), waits at least `hedge_large_min_delay_s` for its first byte: a
    duplicate of it moves its bytes twice should the first answer then begin. A whole
    value has no limit on the whole read: its size is not known before its answer.
    """
    floor = settings.hedge_min_delay_s
    if nbytes is None or nbytes > settings.hedge_large_bytes:
        wait_floor = max(floor, settings.hedge_large_min_delay_s)
    else:
        wait_floor = floor
    multiple = settings.hedge_p95_multiple
    # A whole value's size is not known before its answer: the reads of its size class
    # are of every size (metadata documents and large chunks alike), so they tell no
    # limit on the whole read; its wait's limit stands.
    p95_whole = None if nbytes is None else statistics.latencies.p95(nbytes)
    whole = None if p95_whole is None else max(floor, multiple * p95_whole)
    if (p95_wait := statistics.first_bytes.p95(None)) is not None:
        wait: float | None = multiple * p95_wait
    elif (median := statistics.first_bytes.median(None)) is not None:
        wait = _COLD_WAIT_MULTIPLE * median
    else:
        wait = None
    # Not begun in twice the time reads of its size take in all is slow too, whatever
    # the waits of large reads queued behind a busy link say (`_WHOLE_WAIT_MULTIPLE`).
    if whole is not None:
        wait = min(math.inf if wait is None else wait, _WHOLE_WAIT_MULTIPLE * whole)
    return (None if wait is None else max(wait_floor, wait)), whole


async def _hedged(
    runtime: StoreRuntime, request: Request[T], remaining_s: float, settings: config.Config
) -> T:
    """One try that sends a second copy if the first is slow (`hedge_delays`); the
    first answer wins. Before there are peers to compare with, the try is a plain one.
    """
    wait_s, whole_s = hedge_delays(runtime.statistics, request.nbytes, settings)
    if wait_s is None and whole_s is None:
        return await _attempt(runtime, request, remaining_s, settings)
    # The first copy runs in this task; a timer sends the others, so a read that is not
    # slow (nearly all of them) costs no second task, no wake-up and no cancel scope.
    copies = _Copies(runtime, request, remaining_s, settings)
    timer = copies.timer = _HedgeTimer(wait_s, whole_s, copies.send, runtime.statistics.in_flight)
    first = copies.first = asyncio.timeout(None)  # expired by the copy that wins
    try:
        async with first:
            value = await _attempt(runtime, request, remaining_s, settings, timer)
    except BaseException as exc:
        won = isinstance(exc, TimeoutError) and first.expired()
        # A failed first copy leaves the copies sent to answer; a cancelled read does not,
        # and stays cancelled even if a copy had answered.
        cancelled = not isinstance(exc, Exception)
        await copies.end(cancel=won or cancelled)
        if copies.answers and not cancelled:
            runtime.statistics.count("hedges_won")
            return copies.answers[0]  # type: ignore[no-any-return]
        raise
    await copies.end(cancel=True)
    return value


class _Copies:
    """The second copies of one hedged read, each a task of its own, sent by the read's
    timer; the first to answer cancels the first copy (which runs in the read's task,
    under `first`). None outlives `end`."""

    def __init__(
        self,
        runtime: StoreRuntime,
        request: Request[Any],
        remaining_s: float,
        settings: config.Config,
    ) -> None:
        self.runtime, self.request = runtime, request
        self.remaining_s, self.settings = remaining_s, settings
        self.timer: _HedgeTimer
        self.first: asyncio.Timeout | None = None  # while the first copy runs
        self.tasks: list[asyncio.Task[None]] = []
        self.answers: list[Any] = []

    def send(self) -> None:
        statistics = self.runtime.statistics
        if may_hedge(statistics, self.settings):
            statistics.count("hedges_issued")
            self.tasks.append(asyncio.get_running_loop().create_task(self._copy()))

    async def _copy(self) -> None:
        # The copy takes its straggler's slot, not one of its own: where throttling has
        # cut the budget to a slot or two, a copy queued behind the very read it races
        # (or behind every read waiting) would wait as long as it does.
        runtime, request, timer = self.runtime, self.request, self.timer
        try:
            value = await _attempt(
                runtime, request, self.remaining_s, self.settings, lent=timer.slot
            )
        except Exception as exc:  # the first copy may still answer (or fail for both)
            if classify(exc).retryable:
                timer.again()
            return
        self.answers.append(value)
        if self.first is not None and len(self.answers) == 1:
            self.first.reschedule(asyncio.get_running_loop().time())  # the loser is dropped

    async def end(self, cancel: bool) -> None:
        """Stop sending copies and wait for those sent to end, cancelled first if
        `cancel`; a cancellation of the read meanwhile cancels them too, and is raised
        once they have ended."""
        self.timer.cancel()
        self.first = None
        cancelled = False
        while pending := [task for task in self.tasks if not task.done()]:
            if cancel or cancelled:
                for task in pending:
                    task.cancel()
            try:
                await asyncio.wait(pending)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
