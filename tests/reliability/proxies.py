"""A misbehaving reverse proxy for tests: it sits on 127.0.0.1 in front of a real server
(the emulator, moto) and breaks one HTTP rule on purpose, as some proxies, gateways and
"S3-compatible" servers do.

    with Proxy(emulator.endpoint, drop_conditions=True).running() as proxy:
        store = S3Store(bucket, endpoint=proxy.endpoint, ...)

- `drop_conditions`: `If-Match` / `If-None-Match` never reach the server (it ignores
  conditions);
- `drop_etags`: answers to GET and HEAD carry no `ETag` (reads come back without a
  version; a PUT's answer keeps it, which obstore requires);
- `ignore_range`: `Range` never reaches the server (every GET answers 200 with the whole
  value);
- `short_ranges`: the next N `206` answers lose their last 4 bytes; `relabel` says
  whether their `Content-Range` is changed to match (else it still names the range
  asked for);
- `hold(n)`: the next `n` requests (of one method, if `method` is given) wait until all
  `n` have arrived, then go on together (a client sees no answer to any of them before
  it has sent them all).

Requests keep their `Host` header, so signed requests stay valid. `stats()` counts the
requests by method and the body bytes sent back; `sent` lists `(method, path, whether
it asked for a range)` of every request.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
from aiohttp import web
from tests.servers import in_background, serving

__all__ = ["Proxy"]

# Headers about one hop's connection or body framing: never passed on as they are.
_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}
)
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class Proxy:
    """A reverse proxy to `target` (`http://host:port`) that breaks the rules it is told to."""

    def __init__(
        self,
        target: str,
        *,
        drop_conditions: bool = False,
        drop_etags: bool = False,
        ignore_range: bool = False,
        short_ranges: int = 0,
        relabel: bool = False,
    ) -> None:
        self.target = target.rstrip("/")
        self.drop_conditions = drop_conditions
        self.drop_etags = drop_etags
        self.ignore_range = ignore_range
        self.short_ranges = short_ranges
        self.relabel = relabel
        self._lock = threading.Lock()
        self._holding = 0  # requests still to arrive before the held ones go on
        self._hold_method: str | None = None  # the method of the requests held (None: any)
        self._held: asyncio.Event | None = None  # set when they may
        self.requests: Counter[str] = Counter()
        self.sent: list[tuple[str, str, bool]] = []
        self.bytes_sent = 0
        self.shortened = 0
        self.endpoint = ""  # the proxy's base URL while it runs
        self._session: aiohttp.ClientSession | None = None

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": dict(self.requests),
                "bytes_sent": self.bytes_sent,
                "shortened": self.shortened,
            }

    def hold(self, n: int, method: str | None = None) -> None:
        """Hold the next `n` requests (of `method` only, if given) until all `n` have
        arrived."""
        with self._lock:
            self._holding = n
            self._hold_method = method

    async def _until_all_held_arrived(self, method: str) -> None:
        with self._lock:  # (the requests are all handled on the proxy's one loop)
            if self._holding <= 0 or self._hold_method not in (None, method):
                return
            self._holding -= 1
            if self._held is None:
                self._held = asyncio.Event()
            held = self._held
            if self._holding == 0:
                held.set()
                self._held = None
        await asyncio.wait_for(held.wait(), 60)

    def reset_stats(self) -> None:
        with self._lock:
            self.requests.clear()
            self.sent.clear()
            self.bytes_sent = 0

    async def _forward(self, request: web.Request) -> web.Response:
        with self._lock:
            self.requests[request.method] += 1
            self.sent.append((request.method, request.path, "Range" in request.headers))
        await self._until_all_held_arrived(request.method)
        dropped = set(_HOP)
        if self.drop_conditions:
            dropped |= {"if-match", "if-none-match"}
        if self.ignore_range:
            dropped.add("range")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in dropped}
        body = await request.read()
        assert self._session is not None, "the proxy is not running"
        async with self._session.request(
            request.method,
            self.target + request.path_qs,
            headers=headers,
            data=body if body else None,
            allow_redirects=False,
            auto_decompress=False,
        ) as answer:
            content = await answer.read()
            status = answer.status
            reading = request.method in ("GET", "HEAD")
            hidden = _HOP | ({"etag"} if self.drop_etags and reading else set())
            out = {k: v for k, v in answer.headers.items() if k.lower() not in hidden}
        if status == 206 and self._take_short():
            content = content[:-4]
            name = next((k for k in out if k.lower() == "content-range"), "Content-Range")
            found = _CONTENT_RANGE.fullmatch(out.get(name, ""))
            if self.relabel and found is not None:
                start, stop, total = found.groups()
                out[name] = f"bytes {start}-{int(stop) - 4}/{total}"
        if request.method == "HEAD":
            # No body to frame: keep the length the server announced.
            length = answer.headers.get("Content-Length")
            response = web.Response(status=status, headers=out)
            if length is not None:
                response.headers["Content-Length"] = length
            return response
        with self._lock:
            self.bytes_sent += len(content)
        return web.Response(status=status, headers=out, body=content)

    def _take_short(self) -> bool:
        with self._lock:
            if self.short_ranges <= 0:
                return False
            self.short_ranges -= 1
            self.shortened += 1
            return True

    @contextlib.asynccontextmanager
    async def _serving(self) -> AsyncIterator[str]:
        """The proxy's server and its client session to the target, for the block."""
        connector = aiohttp.TCPConnector(limit=0)
        async with (
            aiohttp.ClientSession(connector=connector, auto_decompress=False) as session,
            serving(self._forward, client_max_size=1 << 31) as url,
        ):
            self._session = session
            yield url

    @contextlib.contextmanager
    def running(self) -> Iterator[Proxy]:
        """Serve on 127.0.0.1 (a free port) from a daemon thread for the `with` block."""
        with in_background(self._serving()) as self.endpoint:
            yield self
