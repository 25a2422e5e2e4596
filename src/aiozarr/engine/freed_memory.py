"""After a large read, the memory its fetched bytes took goes back to the system.

The bytes a read fetches are allocated by the store client's threads (obstore's; glibc's
malloc, an arena per thread). Once glibc frees one large block it raises its mmap
threshold to that block's size (up to 32 MiB), so from the second large read of a
process on, buffers of a shard's size come from those arenas, and stay resident after
they are freed: 16-shard full read (512 MiB out, 246 MB fetched), RSS 607 MiB after the
first read, 790-822 MiB after each later one, and 1.27 GiB as the benchmark's peak
after three. `malloc_trim(0)` after a read that large returns the free pages of every
arena (1-18 ms, measured): resident memory between reads falls back to ~90 MiB.

Within such a read the same holds for each shard's buffer once its chunks are decoded:
it stays resident beside the output as it fills, and the later reads' peak was the
output and every fetched byte (817-826 MiB against 611-652 for the first). So a read
that large also gives memory back each time `TRIM_EVERY_BYTES` of what it fetched has
been decoded (`FreedMemory`): the benchmark's peak after three full reads went from
819-821 MiB to 675-687, with no change in time or CPU (`python -m benchmarks --full
--workloads full --engines aiozarr-async,tensorstore`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

import anyio

__all__ = ["TRIM_AFTER_BYTES", "TRIM_EVERY_BYTES", "FreedMemory", "give_back_freed_memory"]

#: Reads with an output at least this large give their freed memory back; below, the
#: arenas' free blocks are few and reused by the next read. Trimming has a price: the
#: next read faults its buffers in afresh (a quick-mode 64 MiB read of 1 MiB chunks:
#: ~0.15-0.16 s CPU with a trim after each read, ~0.13-0.16 s without,
#: `python -m benchmarks.read_cpu --mode quick --path v2.zarr --latency 0`), which a
#: 512 MiB read (~1.5 s CPU) barely notices.
TRIM_AFTER_BYTES = 256 << 20

#: During a read whose output is at least `TRIM_AFTER_BYTES`, freed memory is given back
#: each time this many fetched bytes have been decoded (seven times in a 16-shard full
#: read that fetches 246 MB).
TRIM_EVERY_BYTES = 32 << 20


class FreedMemory:
    """What one read has freed: a read whose output is at least `TRIM_AFTER_BYTES` gives
    the memory back each time `TRIM_EVERY_BYTES` of its fetched bytes are decoded, and
    once more when it ends."""

    def __init__(self, output_bytes: int) -> None:
        self.active = output_bytes >= TRIM_AFTER_BYTES
        self._since = 0

    async def decoded(self, nbytes: int) -> None:
        """`nbytes` of fetched bytes are decoded (and so freed)."""
        if not self.active:
            return
        self._since += nbytes
        if self._since >= TRIM_EVERY_BYTES:
            self._since = 0
            await self.give_back()

    async def give_back(self) -> None:
        """Give the freed memory back now, on a thread of its own: on the codec pool it
        would wait behind every chunk queued there."""
        if self.active:
            await anyio.to_thread.run_sync(give_back_freed_memory)


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
