"""How the emulator's answers go out: held back before their first byte (while the client
still waits), their bodies paced to a bandwidth cap, broken by a fault (truncated, then
the connection closed; or trickled out slowly), or streamed piece by piece from an open
file. `count` is told each piece of body sent (the server's `bytes_read`)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from aiozarr.emulator.faults import Fault
from aiozarr.emulator.files import FileSlice

__all__ = ["PACE_BYTES", "Pacer", "faulty_body", "hold", "paced_body", "stream_file"]

PACE_BYTES = 256 << 10  # a bandwidth-capped body goes out in pieces of at most this


async def hold(request: web.Request, seconds: float) -> None:
    """Wait `seconds` before answering `request`, or until its client has gone (a late
    answer nobody waits for would count as in flight long after)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while (left := until - loop.time()) > 0:
        if request.transport is None or request.transport.is_closing():
            raise asyncio.CancelledError
        await asyncio.sleep(min(left, 0.05))


class Pacer:
    """When each piece of a body may go (or be taken) so that the body moves at most at
    `bps` bytes per second (0: no cap); the deadline is cumulative, so the rate is exact
    whatever the timer's grain."""

    def __init__(self, bps: float) -> None:
        self.bps = bps
        self.started = time.monotonic()
        self.moved = 0

    async def wait(self, nbytes: int) -> None:
        """Wait until `nbytes` more may have moved at the cap."""
        self.moved += nbytes
        if self.bps > 0:
            ahead = self.started + self.moved / self.bps - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)


async def _stream_of(
    request: web.Request, response: web.Response, length: int
) -> web.StreamResponse:
    """A prepared stream with `response`'s status and headers, `length` bytes long."""
    stream = web.StreamResponse(status=response.status, headers=response.headers)
    stream.content_length = length
    await stream.prepare(request)
    return stream


async def faulty_body(
    request: web.Request, response: web.Response, fault: Fault, count: Callable[[int], None]
) -> web.StreamResponse:
    """Send `response` with its body truncated (then close) or trickled slowly, as
    `fault` says."""
    body = bytes(response.body)  # type: ignore[arg-type]
    stream = await _stream_of(request, response, len(body))
    if fault.kind == "truncate":
        await stream.write(body[: len(body) // 2])
        assert request.transport is not None
        request.transport.abort()
        raise asyncio.CancelledError
    pieces = 8
    step = -(-len(body) // pieces)
    for i in range(0, len(body), step):
        await asyncio.sleep(fault.delay_s / pieces)
        await stream.write(body[i : i + step])
    await stream.write_eof()
    count(len(body))
    return stream


async def paced_body(
    request: web.Request, response: web.Response, bps: float, count: Callable[[int], None]
) -> web.StreamResponse:
    """Send `response`'s body no faster than `bps` bytes per second."""
    body = memoryview(bytes(response.body))  # type: ignore[arg-type]
    stream = await _stream_of(request, response, len(body))
    pacer = Pacer(bps)
    for at in range(0, len(body), PACE_BYTES):
        piece = body[at : at + PACE_BYTES]
        await pacer.wait(len(piece))
        await stream.write(piece)
        count(len(piece))
    await stream.write_eof()
    return stream


async def stream_file(
    request: web.Request,
    body: FileSlice,
    status: int,
    headers: dict[str, str],
    bps: float,
    count: Callable[[int], None],
    reading: Callable[..., Awaitable[bytes]],
) -> web.StreamResponse:
    """Send a large body from its open file piece by piece (then close the file), no
    faster than `bps` bytes per second (0: no cap); `reading(fn, *args)` runs each read
    on a thread."""
    try:
        stream = web.StreamResponse(status=status, headers=headers)
        stream.content_length = body.stop - body.start
        await stream.prepare(request)
        pacer = Pacer(bps)
        at = body.start
        while at < body.stop:
            piece = await reading(os.pread, body.fd, min(PACE_BYTES, body.stop - at), at)
            if not piece:
                break
            await pacer.wait(len(piece))
            await stream.write(piece)
            at += len(piece)
            count(len(piece))
        await stream.write_eof()
        return stream
    finally:
        os.close(body.fd)
