"""The files of icechunk repositories kept for the process: snapshots and manifests.

Both are immutable once written and named by random ids, so a store opened again on
the same repository (another array of it, a second `open_*`) reads neither twice: a
branch then costs its ref and the chunks, a snapshot id the chunks alone. One LRU
bounded in bytes (`config.icechunk_manifest_cache_bytes`) holds them all; each key
names the repository and the options it was read with, so a file read with one set
of credentials is never handed to a store opened with others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from aiozarr import config, fork_safe
from aiozarr.byte_cache import LRUByteCache

__all__ = ["kept_files", "repository_scope"]

_lock = fork_safe.lock()  # released in a forked child: a parent thread may hold it
_kept: LRUByteCache | None = None


def kept_files() -> LRUByteCache:
    """The process's cache of repository files, sized by the configuration now in force
    (a changed size starts an empty one)."""
    global _kept
    size = config.get().icechunk_manifest_cache_bytes
    with _lock:
        if _kept is None or _kept.max_bytes != size:
            _kept = LRUByteCache(size)
        return _kept


def repository_scope(url: str, options: Mapping[str, Any]) -> str:
    """The prefix of the cache keys of the repository at `url` read with `options`
    (hashed: the options may hold credentials)."""
    digest = hashlib.sha256(repr(sorted(options.items())).encode()).hexdigest()[:16]
    return f"{url}\0{digest}\0"
