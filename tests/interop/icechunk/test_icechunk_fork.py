"""A child forked while a parent thread held one of the icechunk reader's module locks
(the cache of repository files, taken by every read of a snapshot or manifest; the one a
store takes as it indexes its first snapshot) reads the repository: both were plain
locks, inherited held, and the child hung on its first read."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from tests.interop.icechunk.generate import Written

import aiozarr
from aiozarr.storage.references.icechunk import kept
from aiozarr.storage.references.icechunk import store as icechunk_store

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    pytest.mark.timeout(120),
]

CHILD_DEADLINE_S = 20.0


def test_a_child_forked_while_the_locks_were_held_reads(written: Written) -> None:
    expected = np.arange(9) * 1000
    with kept._lock, icechunk_store._FIRST_INDEX:
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            ok = False
            try:
                read = aiozarr.open_array(written.path, "late", mode="r")[...]
                ok = read.tolist() == expected.tolist()
            finally:
                os._exit(0 if ok else 1)
    end = time.monotonic() + CHILD_DEADLINE_S
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, "the child read wrong values"
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung: no exit within {CHILD_DEADLINE_S} s")
