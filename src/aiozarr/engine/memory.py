"""The memory a read's result may take."""

from __future__ import annotations

import functools
import os


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
