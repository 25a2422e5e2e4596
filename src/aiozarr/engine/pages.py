"""How a read's output is paged in: small pages, not huge ones.

numpy asks the kernel for transparent huge pages on every allocation of 4 MiB or more
(`madvise(MADV_HUGEPAGE)`). Where the kernel then compacts memory to find them (THP
`defrag` set to `madvise`, the usual default), a process's first large array is slow
to touch: a fresh 512 MiB output cost 1.9 s of CPU to fill the first time in a process
and 0.25-0.29 s with 4 KiB pages (measured alone; the full benchmark's first read of a
process was ~1 s slower than TensorStore's, which pages its outputs in small pages).
A read fills its output once, then hands it over: the TLB gain of huge pages does not
pay for that, so outputs are advised back to small pages before they are touched.
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np

__all__ = ["small_pages"]

# numpy's own threshold for asking for huge pages.
_HUGE_FROM_BYTES = 4 << 20
_NO_HUGE_PAGES = getattr(mmap, "MADV_NOHUGEPAGE", None)
_madvise = ctypes.CDLL(None, use_errno=True).madvise if sys.platform == "linux" else None


def small_pages(array: np.ndarray) -> np.ndarray:
    """`array` (fresh, untouched), its memory advised to small pages where the platform
    can (Linux); returned as it is elsewhere, or if the advice is refused."""
    if _madvise is None or _NO_HUGE_PAGES is None or array.nbytes < _HUGE_FROM_BYTES:
        return array
    start = array.ctypes.data // mmap.PAGESIZE * mmap.PAGESIZE
    length = array.ctypes.data + array.nbytes - start
    _madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), _NO_HUGE_PAGES)
    return array
