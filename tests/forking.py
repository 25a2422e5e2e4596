"""Forked children for tests: run work in an `os.fork()` child under a deadline, so a
child that hangs fails its test instead of hanging the suite."""

from __future__ import annotations

import os
import signal
import time
import warnings
from collections.abc import Callable

import pytest

#: How long a forked child may take before it counts as hung.
CHILD_DEADLINE_S = 20.0


def run_in_fork(work: Callable[[], None], deadline: float = CHILD_DEADLINE_S) -> None:
    """Run `work()` in an `os.fork()` child; fail with its error, or when it hangs."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # a threaded parent is what these tests fork
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12's word on it
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            os.close(read_end)
            work()
            status = 0
        except BaseException as error:
            os.write(write_end, f"{type(error).__name__}: {error}".encode()[:4000])
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        status = wait_for_child(pid, deadline)
        message = os.read(read_end, 4096).decode(errors="replace")
    finally:
        os.close(read_end)
    assert status == 0, f"the forked child failed: {message}"


def wait_for_child(pid: int, deadline: float = CHILD_DEADLINE_S) -> int:
    """The child's exit code; kill it and fail if it runs past `deadline` seconds."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung: no exit within {deadline} s")
