"""How a command ends: an error is one line on stderr (`aiozarr info: error: ...`) and
exit status 1 (2 for a bad command line, from `Parser`); `--debug` or `AIOZARR_DEBUG`
shows the traceback instead, and Ctrl-C is status 130."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import traceback
from collections.abc import Awaitable, Callable

__all__ = ["run_command"]


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
        if getattr(args, "debug", False) or os.environ.get("AIOZARR_DEBUG"):
            traceback.print_exc()
        else:
            print(f"{prog}: error: {_one_line(error)}", file=sys.stderr)
        return 1


async def _call(body: Callable[[], Awaitable[int | None]]) -> int | None:
    return await body()
