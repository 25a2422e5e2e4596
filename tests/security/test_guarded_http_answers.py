"""A server cannot make `GuardedHTTPStore` take more or other bytes than it asked for.

The host of a reference file is read by default, so whoever serves it chooses the answers:

- a `206` longer than the range asked for (announced or chunked) is refused as soon as
  the extra bytes come, the rest unread;
- a `206` for another range (`Content-Range` start, end or total not the request's) is
  refused, `/*` included; a range cut short of the value's end is not taken as clipped;
- a `200` that ignores `Range` is read no further than the range's end and cut to it; a
  whole value is read no further than its bound.

A plain HTTP server on 127.0.0.1 plays the hostile part. It streams its bodies in pieces
and counts what it managed to send, so the tests see that the client stopped reading.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from aiohttp import web
from tests.servers import in_background, serving

from aiozarr.byte_range import ByteRange
from aiozarr.errors import StoreError, ValueTooLargeError
from aiozarr.storage.backends.guarded_http import GuardedHTTPStore
from aiozarr.storage.policy.retry import ShortReadError

HUGE = 50_000_000
PIECE = bytes(range(256)) * 4096  # 1 MiB
# What can sit in socket buffers and the client's read buffer before it stops reading.
UNREAD = 20_000_000


@dataclass(frozen=True)
class _Answer:
    status: int
    content_range: str | None
    size: int
    announce: bool = True  # Content-Length, else chunked


ANSWERS = {
    "big206": _Answer(206, "bytes 0-99/1000", HUGE),
    "chunked206": _Answer(206, "bytes 0-99/1000", HUGE, announce=False),
    "elsewhere206": _Answer(206, "bytes 500-599/*", 100),
    "cut206": _Answer(206, "bytes 0-9/1000", 10),
    "suffix206": _Answer(206, "bytes 0-99/1000", 100),
    "clipped206": _Answer(206, "bytes 900-999/1000", 100),
    "unsized206": _Answer(206, "bytes 0-99/*", 100),
    "short206": _Answer(206, "bytes 0-99/1000", 10, announce=False),
    "ignored": _Answer(200, None, HUGE),
    "ignored_chunked": _Answer(200, None, HUGE, announce=False),
}


class _Server:
    """Answers each path of `ANSWERS` as it says, counting the body bytes sent."""

    def __init__(self) -> None:
        self.sent = 0
        self.done = threading.Event()
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        answer = ANSWERS[request.path.lstrip("/")]
        response = web.StreamResponse(status=answer.status)
        if answer.content_range is not None:
            response.headers["Content-Range"] = answer.content_range
        if answer.announce:
            response.content_length = answer.size
        else:
            response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            left = answer.size
            while left:
                piece = PIECE[: min(left, len(PIECE))]
                await response.write(piece)
                self.sent += len(piece)
                left -= len(piece)
            await response.write_eof()
        except ConnectionError:
            pass  # the client stopped reading
        finally:
            self.done.set()
        return response

    def finished(self) -> int:
        """The body bytes sent, once the answer is over."""
        assert self.done.wait(60), "the server never finished its answer"
        return self.sent


@pytest.fixture
def server() -> Iterator[_Server]:
    found = _Server()
    with in_background(serving(found.handle, method="GET")) as url:
        found.url = url
        yield found


def _refuse(from_url: str, to_url: str) -> str:
    raise AssertionError(f"no redirect expected: {from_url} -> {to_url}")


def _store(server: _Server) -> GuardedHTTPStore:
    return GuardedHTTPStore(server.url, check_redirect=_refuse)


def _get(server: _Server, key: str, byte_range: ByteRange | None, max_bytes: int | None = None):
    return asyncio.run(_store(server).get(key, byte_range, max_bytes=max_bytes))


@pytest.mark.parametrize("key", ["big206", "chunked206"])
def test_a_partial_answer_longer_than_asked_is_refused_unread(server: _Server, key: str) -> None:
    with pytest.raises(StoreError, match=key):
        _get(server, key, ByteRange.of(0, 100))
    assert server.finished() < UNREAD


@pytest.mark.parametrize(
    ("key", "byte_range"),
    [
        ("elsewhere206", ByteRange.of(0, 100)),  # another start, total unknown
        ("cut206", ByteRange.of(0, 100)),  # ends before the value does
        ("suffix206", ByteRange.last(100)),  # the first 100 of 1000, not the last
    ],
)
def test_a_partial_answer_for_another_range_is_refused(
    server: _Server, key: str, byte_range: ByteRange
) -> None:
    with pytest.raises(StoreError, match=f"{key}.*asked for {byte_range}"):
        _get(server, key, byte_range)


@pytest.mark.parametrize("key", ["ignored", "ignored_chunked"])
def test_a_whole_answer_to_a_range_is_read_to_the_range_end_only(server: _Server, key: str) -> None:
    got = _get(server, key, ByteRange.of(1000, 100))
    assert bytes(got) == (PIECE * 2)[1000:1100]
    assert server.finished() < UNREAD


@pytest.mark.parametrize("key", ["ignored", "ignored_chunked"])
def test_a_whole_value_over_its_bound_is_refused_unread(server: _Server, key: str) -> None:
    with pytest.raises(ValueTooLargeError, match=key):
        _get(server, key, None, max_bytes=1000)
    assert server.finished() < UNREAD


@pytest.mark.parametrize(
    ("key", "byte_range"),
    [
        ("clipped206", ByteRange.of(900, 200)),  # clipped at the value's end
        ("unsized206", ByteRange.of(0, 100)),  # all of the range, total unknown
    ],
)
def test_a_partial_answer_for_the_range_is_taken(
    server: _Server, key: str, byte_range: ByteRange
) -> None:
    assert bytes(_get(server, key, byte_range)) == PIECE[:100]


def test_a_partial_answer_cut_short_is_a_short_read(server: _Server) -> None:
    with pytest.raises(ShortReadError, match="short206"):
        asyncio.run(_store(server).read("short206", ByteRange.of(0, 100), None))
