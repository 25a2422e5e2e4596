"""The portal: one background event loop per process that the sync API runs on.

One event loop (uvloop's where installed, `sync_uvloop`) on a daemon thread, started on
first use, after `fork`, and again if it ever dies; each call is a task of its own.
`run` is public because every sync twin (the facade's classes, api, copy, migrate,
xarray) goes through it. A `KeyboardInterrupt` (or the `sync_timeout_s` setting running
out) while blocked cancels the task and waits for it to end before re-raising. A sync
call reads on its own, at once, even inside the caller's `aiozarr.batch()`. At
interpreter exit, calls that only read are cancelled and calls that write are waited
for (a chunk is never left half written); a call that a thread other than the main one
starts after that waits for the interpreter to end it.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import anyio

from aiozarr import config, fork_safe
from aiozarr.engine.entry import gather
from aiozarr.errors import SyncInLoopError, SyncTimeoutError, UnsupportedError
from aiozarr.storage.backends import obstore_exit
from aiozarr.storage.policy.locks import blocking

T = TypeVar("T")
P = ParamSpec("P")

_log = logging.getLogger("aiozarr")

_lock = fork_safe.lock()

# The loop running on this thread, or None: a C call, cheap on every sync call.
_get_running_loop = asyncio._get_running_loop


class _Loop:
    """aiozarr's background event loop: an asyncio loop run forever by a daemon thread.

    Each sync call runs as a task of its own, in no task group: a call that breaks
    anyio's bookkeeping (a cancel scope left unbalanced by a RecursionError, say) fails
    alone instead of tearing down a portal's task group that every call shares. Not
    anyio's `start_blocking_portal` either: its generator's cleanup, run when it is
    garbage collected, joins the loop's thread, which a forked child does not have.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = _new_event_loop()
        self.calls: set[_Call] = set()  # the calls under way, added and removed on the loop
        self._done = asyncio.Event()
        self.thread = threading.Thread(target=self._serve, name="aiozarr-loop", daemon=True)
        try:
            self.thread.start()
        except BaseException:
            # No thread may start (Python 3.12+, at interpreter exit): the loop is closed
            # now, or uvloop's keeps its file descriptors until the process ends.
            self.loop.close()
            raise

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        # A host task that lives as long as the loop, run by `run_until_complete`, is
        # what anyio takes for the root task: the codec pool's threads belong to it
        # and serve every call, instead of ending with each call's task.
        host = self.loop.create_task(self._done.wait(), name=_HOST)
        while True:
            try:
                self.loop.run_until_complete(host)
                return
            except (KeyboardInterrupt, SystemExit):
                # Raised by user code in a task (a progress callback's `sys.exit()`):
                # asyncio lets it out of the loop, but the task holds it as its outcome
                # and the call it belongs to re-raises it on its caller's thread. The
                # loop goes on: every other call waiting on it would hang.
                continue
            except BaseException as error:  # the loop died: `_get_loop` starts a new one
                _log.warning("aiozarr's event loop stopped: %r; the next call starts anew", error)
                return

    @property
    def running(self) -> bool:
        """Whether this process's loop thread still serves calls."""
        return self.pid == os.getpid() and self.thread.is_alive() and not self.loop.is_closed()

    def submit(self, call: _Call) -> concurrent.futures.Future[Any]:
        """Start `call` as a task of its own on the loop."""
        call.loop = self.loop
        return asyncio.run_coroutine_threadsafe(call.run(self.calls), self.loop)

    def stop(self) -> None:
        """End the loop at interpreter exit: calls that only read are cancelled, calls
        that write are waited for. A Ctrl-C during that wait gives them up, quietly."""
        if not self.running:
            return
        cancelled = False
        try:
            with contextlib.suppress(Exception):  # the loop may already be stopping
                cancelled = asyncio.run_coroutine_threadsafe(self._drain(), self.loop).result()
                self.loop.call_soon_threadsafe(self._done.set)
            self.thread.join()
            if cancelled:
                obstore_exit.settle_cancelled_requests()
        except KeyboardInterrupt:  # the daemon thread is left to the interpreter
            for call in list(self.calls):
                call.abandon()

    async def _drain(self) -> bool:
        """Cancel the calls that only read, then wait for every call's task to finish;
        whether any was cancelled."""
        reads = [call for call in self.calls if call.only_reads]
        for call in reads:
            call.abandon()
        others = {
            task
            for task in asyncio.all_tasks()
            if task is not asyncio.current_task() and task.get_name() != _HOST
        }
        await asyncio.gather(*others, return_exceptions=True)
        return bool(reads)


def _new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed and the `sync_uvloop` setting allows, else
    asyncio's: every store answer and every decoded chunk wakes the loop from another
    thread, and uvloop's wake-up runs no Python (docs/decisions/performance.md)."""
    if config.process_settings().sync_uvloop:
        try:
            import uvloop
        except ImportError:  # not installed (Windows): asyncio's loop serves as well
            pass
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


#: The name of the task that holds the loop open (see `_Loop._serve`).
_HOST = "aiozarr-loop-host"


_loop: _Loop | None = None


def _get_loop(stale: _Loop | None = None) -> _Loop:
    """This process's running loop: started on first use, after `fork` (the parent's
    thread does not exist in the child) and when the loop died or is `stale`. Once exit
    began, `_start_loop` looks at the caller first: a loop a later exit handler started
    is no thread's that the exit found running."""
    loop = _loop
    if loop is not None and loop is not stale and loop.running and _left_at_exit is None:
        return loop
    return _start_loop(stale)


def _start_loop(stale: _Loop | None) -> _Loop:
    global _loop
    with _lock:
        # A thread the exit found running (a daemon's background save) starts no loop
        # after aiozarr's exit handler stopped its own: nothing would stop the new one,
        # and the interpreter ended its write half done. The thread waits for the end,
        # as the caller of a cancelled read does; an exit handler's calls still run.
        left = _left_at_exit is not None and threading.current_thread() in _left_at_exit
        if not left and (_loop is None or _loop is stale or not _loop.running):
            # The old loop (a parent's, or a dead one) is dropped, never joined.
            _loop = _Loop()
        loop = _loop
    if left:
        threading.Event().wait()  # until the interpreter ends this thread
    assert loop is not None
    return loop


def _in_loop_thread() -> bool:
    loop = _loop
    return loop is not None and threading.current_thread() is loop.thread


def _start(call: _Call) -> concurrent.futures.Future[Any]:
    """Hand `call` to the loop; a loop that stopped since the last call is replaced by a
    new one rather than failing every later call."""
    try:
        loop = _get_loop()
    except RuntimeError:  # no thread can start (Python 3.12+, at interpreter exit)
        return _run_here(call)
    try:
        return loop.submit(call)
    except RuntimeError:  # "Event loop is closed": it died since `_get_loop` looked
        return _get_loop(stale=loop).submit(call)


#: Whether a wait of `_native_threads_out` ran out (a native thread that stays in Python).
_native_threads_stay = False


def _native_threads_out() -> None:
    """After a call made once aiozarr's exit handler ran (by an exit handler that runs
    after it): wait until obstore's threads have left Python, as that handler's own
    wait (`obstore_exit`) did for the calls before it. The interpreter may finalize as
    soon as this call returns, and a tokio thread still handing over an answer then
    aborted the process (SIGABRT, after the call had succeeded). A wait that ran out
    is not repeated (a native thread of another library that stays in Python)."""
    global _native_threads_stay
    if _left_at_exit is not None and not _native_threads_stay:
        _native_threads_stay = not obstore_exit.wait_for_native_threads()


def _run_here(call: _Call) -> concurrent.futures.Future[Any]:
    """`call` run to its end on the calling thread, in an event loop of its own: at
    interpreter exit, once the loop thread is gone and no new thread may start (an exit
    handler that runs after aiozarr's)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    try:
        future.set_result(asyncio.run(call.run(set())))
    except Exception as error:
        future.set_exception(error)
    return future


#: The threads other than the main one that were running when exit began (set by
#: `_close_loop`); None before.
_left_at_exit: frozenset[threading.Thread] | None = None


@atexit.register
def _close_loop() -> None:
    global _loop, _left_at_exit
    with _lock:
        loop, _loop = _loop, None
        _left_at_exit = frozenset(threading.enumerate()) - {threading.main_thread()}
    if loop is not None:
        loop.stop()


class _Call:
    """One sync call's task on the loop, cancellable from the calling thread at any
    moment: a Ctrl-C can land while `start_task_soon` is still handing the task over,
    before there is a future to cancel."""

    def __init__(
        self,
        call: Callable[[], Awaitable[Any]],
        settings: config.Config,
        caller: asyncio.AbstractEventLoop | None,
        only_reads: bool = False,
    ) -> None:
        self._call = call
        self.only_reads = only_reads
        self.abandoned = False  # cancelled at exit: its caller must not go on
        self._settings = settings
        self._caller = caller  # the loop of the calling thread, which waits for the call
        self._lock = threading.Lock()
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False
        self.loop: asyncio.AbstractEventLoop | None = None  # where it was sent

    async def run(self, calls: set[_Call]) -> Any:
        # `gather(None)`: the caller's `batch()` belongs to the caller's loop, not this one
        with config.use(self._settings), blocking(self._caller), gather(None):
            calls.add(self)
            try:
                with anyio.CancelScope() as scope:
                    with self._lock:
                        self._scope = scope
                        if self._cancelled:
                            scope.cancel()
                    return await self._call()
            except (KeyboardInterrupt, SystemExit) as error:
                # Raised by user code on the loop (a progress callback's `sys.exit()`):
                # asyncio would let it end the loop, and with it every call waiting
                # there. It is the caller's: re-raised on the caller's thread.
                return _Raised(error)
            except BaseExceptionGroup as group:  # the same, from a task of a task group
                interrupts, _ = group.split((KeyboardInterrupt, SystemExit))
                if interrupts is None:
                    raise
                while isinstance(interrupts, BaseExceptionGroup):
                    interrupts = interrupts.exceptions[0]
                return _Raised(interrupts)
            finally:
                calls.discard(self)

    def cancel(self) -> None:
        """Cancel the task, now if it runs, else as soon as it starts."""
        with self._lock:
            self._cancelled = True
            scope = self._scope
        if scope is not None and self.loop is not None:
            with contextlib.suppress(Exception):  # the loop may be gone at exit
                self.loop.call_soon_threadsafe(scope.cancel)

    def abandon(self) -> None:
        """Cancel the call at interpreter exit; its caller, a daemon thread, waits on
        until the interpreter ends it instead of going on with no result."""
        self.abandoned = True
        self.cancel()


def run(
    fn: Callable[..., Awaitable[T]],
    *args: Any,
    inline: Callable[..., tuple[bool, T]] | None = None,
    only_reads: bool = False,
    **kwargs: Any,
) -> T:
    """Run the coroutine function `fn` on aiozarr's background loop and wait for its
    result: the one way a sync function of aiozarr runs async code.

    `inline(*args, **kwargs)` is tried first: `(True, result)` when it could do the work
    on this thread (values in memory), which saves the hop to the loop's thread.
    `only_reads`: the call writes nothing, so interpreter exit cancels it rather than
    waiting for it.
    """
    if _in_loop_thread():
        name = getattr(fn, "__qualname__", repr(fn))
        raise SyncInLoopError(
            f"the sync aiozarr API was called from aiozarr's own event loop; "
            f"use `await {name}(...)` instead (a callback aiozarr calls, such as "
            "`progress=`, runs on that loop: hand the work to a thread of your own)"
        )
    if inline is not None:
        done, result = inline(*args, **kwargs)
        if done:
            return result
    settings = config.get()
    # A loop of this thread (Jupyter's) waits with the call: its waits look for it.
    call = _Call(functools.partial(fn, *args, **kwargs), settings, _get_running_loop(), only_reads)
    future: concurrent.futures.Future[T] | None = None
    try:
        future = _start(call)
        result = _wait(future, settings.sync_timeout_s)
    except BaseException as error:
        if future is not None and future.done():
            _park_if_abandoned(call)
            raise  # the call's own outcome
        call.cancel()  # Ctrl-C or the timeout: the task must not run on
        if future is not None:
            _settle(future)
        if isinstance(error, TimeoutError) and future is not None:
            raise SyncTimeoutError(
                f"{getattr(fn, '__qualname__', fn)} did not finish within "
                f"sync_timeout_s={settings.sync_timeout_s}; it was cancelled"
            ) from None
        raise
    finally:
        _native_threads_out()
    _park_if_abandoned(call)
    if isinstance(result, _Raised):
        raise result.error
    return result


#: The longest a sync call on the main thread waits before it looks for a Ctrl-C again.
_SIGNAL_CHECK_S = 0.1


def _wait(future: concurrent.futures.Future[T], timeout: float | None) -> T:
    """`future.result(timeout)`, waited for in slices on the main thread.

    A Ctrl-C cuts a blocked wait short only when it lands on the waiting thread during
    the wait. One that lands just before the wait begins (the caller's thread was
    preempted on its way in), or on another thread (the kernel may hand a process's
    signal to any thread), is only noted: Python raised it once the wait ended, that is
    once the call had ended by itself, uncancelled. Between slices Python raises it.
    Python raises signals on the main thread only: other threads wait whole.
    """
    if threading.current_thread() is not threading.main_thread():
        return future.result(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= _SIGNAL_CHECK_S:  # the last slice
            return future.result(max(0.0, left))
        try:
            # Raises TimeoutError only while the call runs: `result`'s could be the
            # call's own, or the slice's with the call done just after.
            future.exception(_SIGNAL_CHECK_S)
        except TimeoutError:
            continue
        return future.result()


def _settle(future: concurrent.futures.Future[Any]) -> None:
    """Wait for a cancelled call's task to end, as `await task` does after
    `task.cancel()`: its cleanup (an append taking its growth back, its requests
    cancelled) is done before the caller goes on. Returned at once, an append retried
    after a timeout raced the first one's undo and left a band of fill values. Its
    outcome is dropped; a second Ctrl-C stops the wait."""
    with contextlib.suppress(Exception):
        _wait(future, None)


class _Raised:
    """A `KeyboardInterrupt` or `SystemExit` a call raised on the loop, carried back."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _park_if_abandoned(call: _Call) -> None:
    """A call cancelled at exit has no result: its thread (a daemon) waits for the
    interpreter to end it, instead of going on, or printing a traceback, meanwhile."""
    if call.abandoned:
        threading.Event().wait()


def asyncio_only(fn: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """`fn`, an async entry point, raising `UnsupportedError` at once unless asyncio runs
    it: aiozarr's async API runs on asyncio only."""

    @functools.wraps(fn)
    async def entry(*args: P.args, **kwargs: P.kwargs) -> T:
        if _get_running_loop() is None:
            _refuse_other_library()
        return await fn(*args, **kwargs)

    return entry


def _refuse_other_library() -> None:
    raise UnsupportedError(
        f"aiozarr's async API runs on asyncio, but this code runs under "
        f"{_async_library()}; trio users: run it through trio-asyncio, or use the "
        "sync API (aiozarr.open_array, ...)"
    )


def _async_library() -> str:
    try:
        import sniffio
    except ImportError:  # an optional dependency: only to name the library
        return "no asyncio event loop"
    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return "no asyncio event loop"
