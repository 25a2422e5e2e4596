"""After a large read, the memory its fetched bytes took goes back to the system.

The bytes a read fetches are allocated by the store client's threads (obstore's; glibc's
malloc, an arena per thread). Once glibc frees one large block it raises its mmap
threshold to that block's size (up to 32 MiB), so from the second large read of a
process on, buffers of a shard's size come from those arenas, and stay resident after
they are freed: 16-shard full read (512 MiB out, 246 MB fetched), RSS 607 MiB after the
first read, 790-822 MiB after each later one, and 1.27 GiB as the benchmark's peak
after three. `malloc_trim(0)` after a read that large returns the free pages of every
arena (1-18 ms, measured): resident memory between reads falls back to ~90 MiB.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["TRIM_AFTER_BYTES", "give_back_freed_memory"]

#: Reads with an output at least this large give their freed memory back; below, the
#: arenas' free blocks are few and reused by the next read. Trimming has a price: the
#: next read faults its buffers in afresh (a quick-mode 64 MiB read of 1 MiB chunks:
#: ~0.15-0.16 s CPU with a trim after each read, ~0.13-0.16 s without,
#: `python -m benchmarks.read_cpu --mode quick --path v2.zarr --latency 0`), which a
#: 512 MiB read (~1.5 s CPU) barely notices.
TRIM_AFTER_BYTES = 256 << 20


def _malloc_trim() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    return getattr(libc, "malloc_trim", None)  # glibc only (musl has none)


_trim = _malloc_trim()


def give_back_freed_memory() -> bool:
    """Return the allocator's free memory to the system; False where the platform's
    allocator cannot (not glibc)."""
    if _trim is None:
        return False
    _trim(0)  # type: ignore[operator]
    return True
