"""At interpreter exit, obstore's threads leave Python before the interpreter finalizes.

obstore answers each request on one of tokio's threads, which hands the result to the
event loop with `loop.call_soon_threadsafe`: Python code that appends the callback, then
writes a byte to the loop's wake-up socket with the GIL released. A loop that is awake
already runs the callback before that write returns, so the program can end, and the
interpreter start finalizing, while the tokio thread is still inside the call. When it
takes the GIL back, Python (before 3.14) ends the thread with `pthread_exit`, which cannot
unwind through Rust's frames: the process aborts (SIGABRT, nothing printed) after
everything it did succeeded. It happens to the last answers of a run, more often on a
busy machine (the thread waits longer for a CPU between the two steps).

So at exit (`atexit`, while the interpreter is whole) this waits until no thread that
Python's `threading` did not start is running Python code: such a thread (tokio's) in the
middle of a call takes the GIL as soon as it is free, finishes, and leaves. The wait is
bounded (`EXIT_WAIT_S`) in case a native thread of another library stays in Python.

A request cancelled at exit (a read still running, see `aiozarr.sync.portal`) is the
other case: its tokio thread takes the GIL once more to see that its Python future was
cancelled, and after finalization that attempt panics ("The Python interpreter is not
initialized"). Nothing in Python shows when it has done so, so the exit leaves the GIL
free for a moment (`CANCEL_GRACE_S`) once it has cancelled a call.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time

__all__ = [
    "CANCEL_GRACE_S",
    "EXIT_WAIT_S",
    "native_threads_in_python",
    "settle_cancelled_requests",
    "wait_for_native_threads",
]

_log = logging.getLogger("aiozarr.store")

#: The longest exit waits for native threads to leave Python (obstore's take well under
#: a second; a native thread of another library that stays in Python costs this much).
EXIT_WAIT_S = 5.0

#: How long exit leaves the GIL free after cancelling calls, for obstore's threads to
#: see their requests' cancellation. They need microseconds once scheduled, but on a
#: busy machine a thread waits for a CPU: at 0.05 s, a CI run on two cores shared with
#: four other sessions printed the panic (tests/sync/test_exit_with_reads_running.py).
#: Paid only by an exit that cancelled a read.
CANCEL_GRACE_S = 0.25

# What `threading` makes of a native thread that asked for its current thread.
_NATIVE = getattr(threading, "_DummyThread", ())


def native_threads_in_python() -> list[int]:
    """The idents of the threads in Python code now that `threading` did not start
    (tokio's, in obstore's callbacks)."""
    started = {t.ident for t in threading.enumerate() if not isinstance(t, _NATIVE)}
    return [ident for ident in sys._current_frames() if ident not in started]


def wait_for_native_threads(limit_s: float | None = None) -> bool:
    """Wait until no native thread runs Python code (at most `limit_s`, by default
    `EXIT_WAIT_S`); whether none does. Each pause releases the GIL, which the waiting
    threads take to finish."""
    deadline = time.monotonic() + (EXIT_WAIT_S if limit_s is None else limit_s)
    threads = native_threads_in_python()
    if threads:
        _log.debug("exit waits for %d native thread(s) to leave Python", len(threads))
    while threads:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)
        threads = native_threads_in_python()
    return True


def settle_cancelled_requests() -> None:
    """Leave the GIL free for `CANCEL_GRACE_S`, in short sleeps: the tokio threads of
    requests just cancelled take it to see the cancellation, and leave."""
    deadline = time.monotonic() + CANCEL_GRACE_S
    while time.monotonic() < deadline:
        time.sleep(0.001)


# Registered when the storage layer is imported, before the sync portal registers the
# stop of its loop: exit handlers run last-registered first, so this runs once the
# portal's loop (and the requests it ran) has ended.
atexit.register(wait_for_native_threads)
