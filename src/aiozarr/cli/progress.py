"""A progress display for long copies: a tqdm bar on a terminal or in Jupyter, plain log
lines otherwise (CI logs, pipes), so output stays readable wherever it goes.

    with ProgressDisplay("copy", unit="B") as show:
        await copy_async(src, dst, progress=show.copy_progress)
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO, Any

from aiozarr.sizes import human_bytes

__all__ = ["ProgressDisplay", "human_bytes", "plural", "printable"]


def plural(n: int, noun: str) -> str:
    """`1, "array"` -> `"1 array"`; `2, "array"` -> `"2 arrays"`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def printable(name: str) -> str:
    """A node name for a line of text: as it is, or quoted with its escapes (`'a\\nb'`)
    where it holds a character a terminal would act on (a newline that would start a
    line of its own, an escape sequence that would recolour or move the output)."""
    return name if name.isprintable() else repr(name)


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell else None
    return type(ip).__name__ == "ZMQInteractiveShell"


def _tqdm(mode: str, stream: IO[str]) -> Any:
    """The tqdm class to use, or None for plain lines."""
    if mode == "plain":
        return None
    try:
        if _in_notebook():
            from tqdm.notebook import tqdm
        else:
            from tqdm import tqdm
    except ImportError:
        return None
    if mode == "auto" and not (_in_notebook() or stream.isatty()):
        return None
    return tqdm


class ProgressDisplay:
    """Shows bytes and chunks done, rate and ETA of one operation.

    `mode`: "auto" (a bar when tqdm is installed and the output is a terminal or a
    notebook, lines otherwise), "bar", "plain", or "off". Plain lines come at most every
    `interval_s` seconds, and once at the end. `pieces` names what is counted beside the
    bytes ("chunks", or "objects" where each is a shard or a chunk).
    """

    def __init__(
        self,
        label: str,
        *,
        mode: str = "auto",
        stream: IO[str] | None = None,
        interval_s: float = 2.0,
        pieces: str = "chunks",
    ) -> None:
        self.label = label
        self.pieces = pieces
        self.mode = mode
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self._bar: Any = None
        self._tqdm = None if mode == "off" else _tqdm(mode, self.stream)
        self._started = time.perf_counter()
        self._last_line = 0.0
        self._last: tuple[int, int, int, int] = (0, 0, 0, 0)

    def __enter__(self) -> ProgressDisplay:
        self._started = self._last_line = time.perf_counter()  # first line after interval_s
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.mode != "off" and self._last[1] and kind is None:
            self._line(*self._last)

    def update(
        self, bytes_done: int, bytes_total: int, chunks_done: int, chunks_total: int
    ) -> None:
        """Show the new totals."""
        self._last = (bytes_done, bytes_total, chunks_done, chunks_total)
        if self.mode == "off":
            return
        if self._tqdm is not None:
            if self._bar is None:
                self._bar = self._tqdm(
                    total=bytes_total,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    desc=self.label,
                    file=self.stream,
                    dynamic_ncols=True,
                )
            self._bar.update(bytes_done - self._bar.n)
            self._bar.set_postfix_str(f"{chunks_done}/{chunks_total} {self.pieces}", refresh=False)
            return
        now = time.perf_counter()
        if now - self._last_line >= self.interval_s and chunks_done < chunks_total:
            self._last_line = now
            self._line(*self._last)

    def copy_progress(self, progress: Any) -> None:
        """A `copy_async(progress=...)` callback."""
        self.update(
            progress.bytes_done, progress.bytes_total, progress.chunks_done, progress.chunks_total
        )

    def _line(self, bytes_done: int, bytes_total: int, chunks_done: int, chunks_total: int) -> None:
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        rate = bytes_done / elapsed
        left = (bytes_total - bytes_done) / rate if rate > 0 else float("inf")
        eta = f"ETA {left:.0f} s" if left != float("inf") else "ETA ?"
        pct = 100 * bytes_done / bytes_total if bytes_total else 100.0
        print(
            f"{self.label}: {pct:5.1f}% {human_bytes(bytes_done)} of "
            f"{human_bytes(bytes_total)}, {chunks_done}/{chunks_total} {self.pieces}, "
            f"{human_bytes(rate)}/s, {eta if chunks_done < chunks_total else 'done'}",
            file=self.stream,
            flush=True,
        )
