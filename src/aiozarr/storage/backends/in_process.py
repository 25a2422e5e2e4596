"""Stores that live in one process, and how their pickles find them again there.

An in-memory store cannot travel to another process, but its pickle often never leaves
the one that made it (dask's threaded scheduler, `copy.deepcopy`, a pickling cache):
there it must come back as the same store, or the writes through it would go to a copy
and vanish. `reference` names a live store for as long as it lives; `rejoin` finds it
from that name, and finds nothing in another process or once the store is gone.
"""

from __future__ import annotations

import itertools
import os
import secrets
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from aiozarr import fork_safe

__all__ = ["Reference", "one_per_name", "reference", "rejoin"]

T = TypeVar("T")

#: The process a store lives in, and its name there: a `memory://NAME` name or a serial.
Reference = tuple[str, str | int]

# Which process: a token rather than the pid (pids are reused), drawn again in a forked
# child, whose stores are copies of the parent's.
_process = secrets.token_hex(8)
_lock = fork_safe.lock()
_serials = itertools.count(1)
_by_name: dict[str, Any] = {}  # kept for the process's life, as `memory://NAME` promises
_by_serial: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def _after_fork_in_child() -> None:
    global _process
    _process = secrets.token_hex(8)


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def one_per_name(name: str, make: Callable[[], T]) -> T:
    """The one store this process keeps under `name`, made by `make` on first use."""
    with _lock:
        if name not in _by_name:
            _by_name[name] = make()
        return _by_name[name]  # type: ignore[no-any-return]


def reference(store: Any, name: str | None = None) -> Reference:
    """What `rejoin` turns back into `store` in this process: its `name` if it was made
    by `one_per_name`, else a serial kept on the store (`store._serial`) while it lives."""
    if name is not None:
        return (_process, name)
    with _lock:
        if getattr(store, "_serial", None) is None:
            store._serial = next(_serials)
        _by_serial[store._serial] = store
        return (_process, store._serial)


def rejoin(ref: Reference) -> Any | None:
    """The store `ref` names, if it lives in this process; else None."""
    process, key = ref
    if process != _process:
        return None
    with _lock:
        return _by_name.get(key) if isinstance(key, str) else _by_serial.get(key)
