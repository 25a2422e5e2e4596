"""How a command ends: an error is one line on stderr (`aiozarr info: error: ...`) and
exit status 1 (2 for a bad command line, from `Parser`); `--debug` or `AIOZARR_DEBUG`
shows the traceback instead, and Ctrl-C is status 130. A reader of the output that goes
away (`aiozarr info URL | head`) ends the command quietly, with status 141 (as SIGPIPE
would)."""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable

__all__ = ["output_closed", "reader_gone", "run_command"]


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, KeyError | OSError) and type(error).__module__ == "builtins":
        text = f"{type(error).__name__}: {text}"
    return text


def run_command(
    prog: str, args: argparse.Namespace, body: Callable[[], Awaitable[int | None]]
) -> int:
    """Run the coroutine `body()` and turn any failure into one line and status 1."""
    try:
        return asyncio.run(_call(body)) or 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if isinstance(error, BrokenPipeError) and output_closed():
            return reader_gone()
        if getattr(args, "debug", False) or os.environ.get("AIOZARR_DEBUG"):
            traceback.print_exc()
        else:
            print(f"{prog}: error: {_one_line(error)}", file=sys.stderr)
        return 1


def output_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (a write would fail)."""
    if not hasattr(select, "poll"):
        return True
    poll = select.poll()
    poll.register(sys.stdout.fileno(), select.POLLOUT)
    return any(events & select.POLLERR for _, events in poll.poll(0))


def reader_gone() -> int:
    """Stop writing to a closed stdout: what is still buffered goes nowhere instead of
    failing again at exit. The status a process killed by SIGPIPE has."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


async def _call(body: Callable[[], Awaitable[int | None]]) -> int | None:
    return await body()
