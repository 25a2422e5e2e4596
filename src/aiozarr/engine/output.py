"""A read's output: refused before anything is read when it cannot fit, and paged in
small pages, not huge ones.

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
import math
import mmap
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from aiozarr.errors import SelectionTooLargeError
from aiozarr.sizes import human_bytes, memory_bytes

__all__ = ["check_addressable", "check_output_size", "empty_output", "small_pages"]

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


def check_output_size(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str]
) -> None:
    """Raise `SelectionTooLargeError` (naming `what()`, the array: called only then) when
    a result of `shape` would not fit in the memory this process may use."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > memory_bytes():
        _too_large(shape, dtype, what, nbytes)


_LARGEST_INTP = int(np.iinfo(np.intp).max)


def check_addressable(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str]
) -> None:
    """Raise `SelectionTooLargeError` (naming `what()`) when numpy cannot make even a
    view of `shape` (its size in bytes past the largest `intp`: "array is too big", which
    numpy says of an empty shape too where its axes of other lengths span that much); a
    write of a scalar broadcasts it to the selection's shape. Larger than memory but
    addressable is left to the write, which goes a chunk at a time."""
    nbytes = math.prod(n for n in shape if n) * dtype.itemsize  # numpy's rule: empty too
    if nbytes > _LARGEST_INTP and 0 in shape:
        raise SelectionTooLargeError(
            f"{what()}: numpy cannot make an array of shape {tuple(shape)} ({dtype}), empty "
            f"as it is: its other axes span {human_bytes(nbytes)}, more than it addresses; "
            "select less along them"
        )
    if nbytes > _LARGEST_INTP:
        _too_large(shape, dtype, what, nbytes)


def empty_output(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str]
) -> np.ndarray:
    """An uninitialised output array (every element is written by the read); too large
    for memory: `SelectionTooLargeError` naming `what`, before anything is read."""
    check_output_size(shape, dtype, what)
    try:
        return small_pages(np.empty(shape, dtype=dtype))
    except (MemoryError, ValueError):  # numpy: more than this machine or numpy can hold
        _too_large(shape, dtype, what, math.prod(shape) * dtype.itemsize)


def _too_large(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str], nbytes: int
) -> NoReturn:
    raise SelectionTooLargeError(
        f"{what()}: a selection of shape {tuple(shape)} ({dtype}) is {human_bytes(nbytes)} "
        f"({nbytes} bytes), more than the {human_bytes(memory_bytes())} of memory this "
        "process may use; read or write it in parts (e.g. aiozarr.to_dask)"
    )
