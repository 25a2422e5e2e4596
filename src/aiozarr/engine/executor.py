"""Where codec work runs: a bounded thread pool, or inline for tiny chunks.

numcodecs releases the GIL in its heavy codecs, so threads give real parallelism.
A thread hop costs tens of microseconds; decoding a few KiB costs less than that,
so chunks under `INLINE_BYTES` are decoded on the event loop itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from aiozarr import config

T = TypeVar("T")

# Decoded bytes below which a codec call runs inline (no thread hop): a hop is ~50 us,
# decoding 64 KiB with zstd is ~20 us (benchmarks: random single-element reads).
INLINE_BYTES = 64 << 10

_limiters: dict[int, anyio.CapacityLimiter] = {}


_CPUS = os.cpu_count() or 1


def codec_threads() -> int:
    """Threads in the codec pool: the `codec_threads` setting, or one per CPU."""
    return config.get().codec_threads or _CPUS


def _limiter() -> anyio.CapacityLimiter:
    # anyio limiters belong to one event loop; key them by the running loop.
    import asyncio

    loop_id = id(asyncio.get_running_loop())
    limiter = _limiters.get(loop_id)
    if limiter is None:
        limiter = _limiters[loop_id] = anyio.CapacityLimiter(codec_threads())
    return limiter


async def run_codec(fn: Callable[..., T], *args: Any, nbytes: int | None = None) -> T:
    """Run `fn(*args)` on the codec pool, or inline when `nbytes` is small."""
    if nbytes is not None and nbytes <= INLINE_BYTES:
        return fn(*args)
    return await anyio.to_thread.run_sync(fn, *args, limiter=_limiter(), abandon_on_cancel=False)
