"""Progress of one read or write, counted in chunks (inner chunks when sharded)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiozarr.errors import require_extra

#: Called with (chunks done, chunks in all) each time a chunk is finished.
ProgressCallback = Callable[[int, int], None]

#: What a `progress=` argument takes: True for a progress bar (tqdm, in a terminal or
#: Jupyter), a callback `(done, total)`, or None/False for nothing.
ShowProgress = bool | ProgressCallback | None


def as_callback(progress: ShowProgress) -> ProgressCallback | None:
    """The callback a `progress=` argument stands for (`True`: a new tqdm bar)."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _bar()
    return progress


def _bar() -> ProgressCallback:
    """A tqdm bar that appears with its total on the first step and closes on the last."""
    require_extra("progress=True", "tqdm", "progress")
    from tqdm.auto import tqdm

    bar: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bar:
            bar.append(tqdm(total=total, unit="chunk"))
        bar[0].update(done - bar[0].n)
        if done >= total:
            bar[0].close()

    return update


class ChunkProgress:
    """Counts the finished chunks of one call and reports each step to a callback.

    Steps are reported from the event loop (never from a codec thread), in order, and the
    last report has `done == total`.
    """

    __slots__ = ("callback", "done", "total")

    def __init__(self, total: int, callback: ProgressCallback | None = None) -> None:
        self.total = total
        self.done = 0
        self.callback = callback

    def advance(self, chunks: int = 1) -> None:
        # A read that starts over (a shard rewritten under it) or a write that merges
        # again (another writer came first) finishes some chunks twice: never past total.
        done = min(self.done + chunks, self.total)
        if done == self.done:
            return
        self.done = done
        if self.callback is not None:
            self.callback(self.done, self.total)
