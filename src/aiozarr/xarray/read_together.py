"""Reads of several variables started together, read as one plan (`aiozarr.read_many`).

`Dataset.load_async()` starts one read per variable at once. The first read on an event
loop opens a window and yields until no more reads join it (each start runs to its first
wait before the window's next look); then the whole window is read by one `read_many`:
one batch of shard indexes across the variables, one stream of their chunks. A read
that starts alone is read alone, one loop turn later; where the window's read fails,
each of its reads is made again on its own, so an error is only the read's that met it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import anyio.lowlevel

from aiozarr.api import read_many_async
from aiozarr.nodes.array import AsyncArray

_MOST_TURNS = 8
#: The window open on each event loop: the reads that joined it and their futures.
_windows: dict[object, list[tuple[AsyncArray, Any, asyncio.Future[Any]]]] = {}


class _LeaderGone(Exception):
    """The window's read failed or was cancelled: each of its reads reads on its own."""


async def read_together(array: AsyncArray, selection: Any) -> Any:
    """`array.getitem(selection)`, read with every other read started at the same time."""
    token = anyio.lowlevel.current_token()
    window = _windows.get(token)
    if window is not None:  # a window is open: join it
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        window.append((array, selection, future))
        try:
            return await future
        except _LeaderGone:
            return await array.getitem(selection)
    window = _windows[token] = [(array, selection, asyncio.get_running_loop().create_future())]
    try:
        seen, turns = 0, 0
        # until a turn of the loop brings no one new (a few turns at most: reads that
        # keep arriving, as a thread pool's, do not hold the first one back for long)
        while seen != len(window) and turns < _MOST_TURNS:
            seen, turns = len(window), turns + 1
            await anyio.lowlevel.checkpoint()
    finally:
        del _windows[token]
    if len(window) == 1:  # alone: the single read's plan (a large shard in parts)
        return await array.getitem(selection)
    others = [future for _, _, future in window[1:]]
    try:
        values = await read_many_async([(a, sel) for a, sel, _ in window])
    except BaseException as error:
        # Each read of the window then reads on its own (a failure is only its own).
        for future in others:
            future.set_exception(_LeaderGone())
        if isinstance(error, Exception):
            return await array.getitem(selection)
        raise
    for future, value in zip(others, values[1:], strict=True):
        future.set_result(value)
    return values[0]
