"""obstore across `fork`: once a process has made an obstore request, every obstore
request of a child forked from it hangs (obstore 0.12.1, a fresh client too). Such a
child fails at once, with a named error, instead of timing out."""

from __future__ import annotations

import os

from aiozarr.errors import StoreError

__all__ = ["check_not_forked"]

_used = False
_forked_after_use = False


def _mark_forked() -> None:
    global _forked_after_use
    _forked_after_use = _forked_after_use or _used


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_mark_forked)


def check_not_forked(action: str, key: str) -> None:
    """Raise `StoreError` where this process was forked from one that had used obstore
    (before `action` on `key`); else note that obstore is used now."""
    global _used
    if _forked_after_use:
        raise StoreError(
            f"cannot {action} {key!r}: this process was forked from one that had used an "
            "object store, and obstore's runtime does not survive fork; start workers with "
            "multiprocessing's 'spawn' or 'forkserver' method"
        )
    _used = True
