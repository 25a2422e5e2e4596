"""`in_fresh_process`: one part of a benchmark run in a new interpreter.

aiozarr sizes its requests by what a store's earlier reads measured of the link (how
soon answers begin, how fast their bodies come). A benchmark that switches the
emulator's network profile mid-process would carry one profile's link into the next:
the 20 ms profile's whole-shard requests are the wrong size for the cloud profile's
90 MB/s answers. A process stays on one network, so each profile runs in its own, as
the main suite runs each job (`runner.py`).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")

__all__ = ["in_fresh_process"]


def in_fresh_process(job: Callable[..., T], *args: object) -> T:
    """`job(*args)` in a new interpreter (`job` and `args` picklable); its result."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(job, *args).result()
