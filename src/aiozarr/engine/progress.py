"""Progress of one read or write, counted in chunks (inner chunks when sharded)."""

from __future__ import annotations

from collections.abc import Callable

#: Called with (chunks done, chunks in all) each time a chunk is finished.
ProgressCallback = Callable[[int, int], None]


class Progress:
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
        self.done += chunks
        if self.callback is not None:
            self.callback(self.done, self.total)
