"""Where codec work runs: a bounded thread pool, or inline for tiny chunks.

numcodecs releases the GIL in its heavy codecs, so threads give real parallelism.
A thread hop costs tens of microseconds; decoding a few KiB costs less than that,
so chunks under `INLINE_BYTES` are decoded on the event loop itself.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from aiozarr import config

T = TypeVar("T")

# Decoded bytes below which a codec call runs inline (no thread hop): a hop is ~50 us,
# decoding 64 KiB with zstd is ~20 us (benchmarks: random single-element reads).
INLINE_BYTES = 64 << 10

# anyio's worker threads, and the limiters that bound them, belong to one event loop.
# Weak keys: a loop that is gone takes its limiter with it.
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


_CPUS = os.cpu_count() or 1


def codec_threads() -> int:
    """Threads in the codec pool: the `codec_threads` setting, or one per CPU."""
    return config.get().codec_threads or _CPUS


def _limiter() -> anyio.CapacityLimiter:
    """The running loop's codec limiter, sized by the current `codec_threads` setting."""
    loop = asyncio.get_running_loop()
    threads = codec_threads()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(threads)
    elif limiter.total_tokens != threads:
        limiter.total_tokens = threads
    return limiter


async def run_codec(fn: Callable[..., T], *args: Any, nbytes: int | None = None) -> T:
    """Run `fn(*args)` on the codec pool, or inline when `nbytes` is small."""
    if nbytes is not None and nbytes <= INLINE_BYTES:
        return fn(*args)
    return await anyio.to_thread.run_sync(fn, *args, limiter=_limiter(), abandon_on_cancel=False)
