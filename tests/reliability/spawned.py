"""Writers in processes of their own, started together, as two machines would be."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any


def run_writers(target: Callable[..., None], count: int, *args: Any) -> None:
    """Run `target(*args, writer, start)` in `count` spawned processes (`start`: a barrier
    they all pass before writing) and check each one ended well."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(count)
    workers = [
        context.Process(target=target, args=(*args, writer, start)) for writer in range(count)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(150)
        assert worker.exitcode == 0
