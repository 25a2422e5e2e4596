"""Byte counts: as people read them, the memory a process may use, extents, and
splitting by size."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

#: The largest extent (a shape's, a chunk's, a shard's) an array may have: numpy indexes
#: with int64, and the metadata readers refuse more, so nothing larger is ever written.
MAX_EXTENT = 2**63 - 1


def human_bytes(n: float) -> str:
    """`1536` -> `"1.5 KiB"` (binary units up to PiB)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


@functools.cache
def memory_bytes() -> int:
    """The memory this process may use: the machine's, or its container's when smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:  # cgroup v2: "max" or a number of bytes
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total


def ceil_div(n: int, d: int) -> int:
    """`n / d` rounded up, in exact integers: `math.ceil(n / d)` goes through a float
    and is wrong past 2**53 (a chunk count one short, a shard deleted that holds data)."""
    return -(-n // d)


def batched_by_size(
    items: Iterable[T], size_of: Callable[[T], int], budget: int
) -> Iterator[list[T]]:
    """`items` in consecutive lists of at most `budget` by `size_of` (at least one item
    each: a larger one is a list of its own), made as they are taken."""
    batch: list[T] = []
    total = 0
    for item in items:
        size = size_of(item)
        if batch and total + size > budget:
            yield batch
            batch, total = [], 0
        batch.append(item)
        total += size
    if batch:
        yield batch
