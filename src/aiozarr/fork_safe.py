"""Locks (and reentrant locks) a forked child gets released.

A lock another thread of the parent held at `fork` stays held in the child, where that
thread does not exist: the child's first call that takes it waits forever (a read whose
loop thread held the shard-index cache's lock for a moment; a thread changing a setting).
`lock()` makes a `threading.Lock` that every forked child starts with released, as the
`threading` module does for its own locks. What a lock guards is consistent between
calls, so a child that finds it released finds that state too.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

__all__ = ["lock", "rlock"]

_locks: weakref.WeakSet[Any] = weakref.WeakSet()


def lock() -> threading.Lock:
    """A new lock, released in every child forked from this process."""
    made = threading.Lock()
    _locks.add(made)
    return made


def rlock() -> threading.RLock:
    """A new reentrant lock, released in every child forked from this process."""
    made = threading.RLock()
    _locks.add(made)
    return made


def _release_in_child() -> None:
    for held in list(_locks):
        held._at_fork_reinit()  # what `threading` calls on its own locks after a fork


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_release_in_child)
