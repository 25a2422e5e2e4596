"""The object-store emulator behind `aiozarr serve`: a local directory served as an S3
bucket and over plain HTTP.

    async with Emulator(tmp_path, latency_ms=20) as emu:
        store = obstore.store.S3Store(emu.bucket, **emu.storage_options())

    with Emulator(tmp_path).running_in_thread() as emu:   # sync tests, benchmarks
        ...

One URL space serves both protocols: `/{bucket}/{key}` is a path-style S3 object and
also a plain HTTP file (`emu.http_url(key)`), so obstore's `S3Store` and `HTTPStore`,
browsers and `curl` all read the same files. S3 calls: GET (one `Range`: `a-b`, `a-`,
`-n`), HEAD, PUT, DELETE, DeleteObjects (`POST ?delete`), ListObjectsV2, multipart
uploads. Signatures are accepted and ignored. Every response carries CORS headers.

It counts requests (by method and by kind), bytes in and out and requests in flight, and
behaves like a cloud store on request: `latency_ms` before each answer's first byte,
`bandwidth_mbps` as the most each response body streams at, and each request body (an
upload) is received at (every request on its own connection gets the full rate, as with
S3), and a seeded slow tail (`tail_rate` of the answers wait `tail_ms` longer before
their first byte). It injects faults on demand: error statuses, connection resets,
truncated bodies, slow bodies and late answers. Each GET serves one version of its
object even while PUTs replace it. Control endpoints, never counted:
`GET /_emulator/stats`, `POST /_emulator/reset`, `POST /_emulator/faults` (JSON with the
arguments of `inject`, or `{"clear": true}`), `POST /_emulator/latency` (`{"ms": 20}`),
`POST /_emulator/network` (JSON with the arguments of `set_network`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.files import (
    PUT_CONDITIONS,
    TMP_DIR,
    FileSlice,
    read_version,
    stored_keys,
    version_headers,
    write_atomic,
)
from aiozarr.emulator.listing import list_objects_v2
from aiozarr.emulator.multipart import MultipartUploads
from aiozarr.emulator.s3 import S3_NS, S3Error, decode_aws_chunked, error_response, xml_response

__all__ = ["FAULT_KINDS", "Emulator", "Fault"]

#: What `Emulator.inject` can do to a request.
FAULT_KINDS = ("status", "reset", "truncate", "slow", "late")
_PACE_BYTES = 256 << 10  # a bandwidth-capped body goes out in pieces of at most this
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "Content-Range, Content-Length, ETag, Last-Modified, "
    "Accept-Ranges",
}


async def _hold(request: web.Request, seconds: float) -> None:
    """Wait `seconds` before answering `request`, or until its client has gone (a late
    answer nobody waits for would count as in flight long after)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while (left := until - loop.time()) > 0:
        if request.transport is None or request.transport.is_closing():
            raise asyncio.CancelledError
        await asyncio.sleep(min(left, 0.05))


@dataclass
class Fault:
    """A fault rule. `count`: the next N matching requests; `rate`: each with this
    probability; neither: every matching request until `clear_faults`."""

    kind: str
    count: int | None = None
    rate: float | None = None
    key_glob: str | None = None
    methods: tuple[str, ...] | None = None
    status: int = 503
    delay_s: float = 1.0

    def matches(self, method: str, key: str) -> bool:
        if self.methods is not None and method not in self.methods:
            return False
        return self.key_glob is None or fnmatch.fnmatchcase(key, self.key_glob)


@dataclass
class _Stats:
    requests: int = 0
    by_method: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    bytes_read: int = 0  # response bodies: what clients downloaded
    bytes_written: int = 0  # request bodies stored: what clients uploaded
    inflight: int = 0
    peak_inflight: int = 0
    faults: int = 0
    tails: int = 0  # answers held back by the slow tail


class _Pacer:
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


class Emulator:
    """An aiohttp server over `root`: S3 bucket `bucket` at `/{bucket}/` and plain HTTP.

    `async with` runs it in the current event loop; `running_in_thread()` runs it on a
    background thread with its own loop. `port=0` picks a free port.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        latency_ms: float = 0.0,
        bucket: str = "bucket",
        host: str = "127.0.0.1",
        port: int = 0,
        read_only: bool = False,
        seed: int = 0,
        bandwidth_mbps: float = 0.0,
        tail_rate: float = 0.0,
        tail_ms: float = 200.0,
    ) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._bucket = bucket
        self._host, self._port = host, port
        self._latency_s = latency_ms / 1000
        self._list_latency_s = 0.0
        self.read_only = read_only
        self._lock = threading.Lock()
        self._put_lock = threading.Lock()  # a conditional PUT's check and rename: one step
        self._stats = _Stats()
        self._faults: list[Fault] = []
        self._rng = random.Random(seed)
        self._bandwidth_bps = 0.0  # bytes per second per response; 0: unlimited
        self._tail_rate, self._tail_s = 0.0, 0.0
        self._tail_rng = random.Random(seed)  # its own, so tails do not shift fault draws
        self.set_network(bandwidth_mbps=bandwidth_mbps, tail_rate=tail_rate, tail_ms=tail_ms)
        self._uploads = MultipartUploads(self.root, self._path)
        self._runner: web.AppRunner | None = None

    # -- running -----------------------------------------------------------------------

    async def start(self) -> Emulator:
        """Start serving in the running loop; returns self."""
        app = web.Application(client_max_size=1 << 34, middlewares=[self._middleware])
        app.on_response_prepare.append(self._add_cors)
        app.router.add_get("/_emulator/stats", self._http_stats)
        app.router.add_post("/_emulator/reset", self._http_reset)
        app.router.add_post("/_emulator/faults", self._http_faults)
        app.router.add_post("/_emulator/latency", self._http_latency)
        app.router.add_post("/_emulator/network", self._http_network)
        app.router.add_route("*", "/{path:.*}", self._dispatch)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        """Stop serving and close open connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Emulator:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @contextlib.contextmanager
    def running_in_thread(self) -> Iterator[Emulator]:
        """Serve from a daemon thread with its own event loop for the `with` block."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="aiozarr-emulator", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout=30)
            yield self
        finally:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout=30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()

    # -- addresses ---------------------------------------------------------------------

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint(self) -> str:
        """`http://host:port`, the S3 endpoint."""
        return f"http://{self._host}:{self._port}"

    def s3_url(self, path: str = "") -> str:
        """`s3://bucket/path` (use with `storage_options()`)."""
        return f"s3://{self._bucket}/{path.lstrip('/')}"

    def http_url(self, path: str = "") -> str:
        """The plain-HTTP URL of `path` in the bucket (of the bucket itself for "")."""
        path = path.lstrip("/")
        return f"{self.endpoint}/{self._bucket}" + (f"/{path}" if path else "")

    def storage_options(self) -> dict[str, Any]:
        """obstore `S3Store` settings that reach this emulator (anonymous, plain HTTP)."""
        return {
            "endpoint": self.endpoint,
            "region": "us-east-1",
            "skip_signature": True,
            "virtual_hosted_style_request": False,
            "client_options": {"allow_http": True},
        }

    # -- counters, latency, faults -----------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters (plain dicts and ints; JSON-ready)."""
        with self._lock:
            s = self._stats
            data: dict[str, Any] = {
                "requests": s.requests,
                "by_method": dict(s.by_method),
                "by_kind": dict(s.by_kind),
                "by_status": {str(k): v for k, v in s.by_status.items()},
                "bytes_read": s.bytes_read,
                "bytes_written": s.bytes_written,
                "inflight": s.inflight,
                "peak_inflight": s.peak_inflight,
                "faults": s.faults,
                "tails": s.tails,
            }
        data.update(self.network())
        return data

    def reset_stats(self) -> None:
        """Zero the counters (requests in flight stay counted)."""
        with self._lock:
            self._stats = _Stats(inflight=self._stats.inflight)

    def set_latency(self, ms: float) -> None:
        """Delay every later answer by `ms` milliseconds."""
        self._latency_s = ms / 1000

    def set_list_latency(self, ms: float) -> None:
        """Delay every later listing page (one ListObjectsV2 answer) by `ms` more
        milliseconds: a large listing of many slow pages."""
        if not ms >= 0:
            raise ValueError(f"ms must be >= 0, not {ms!r}")
        self._list_latency_s = ms / 1000

    def set_network(
        self,
        *,
        latency_ms: float | None = None,
        bandwidth_mbps: float | None = None,
        tail_rate: float | None = None,
        tail_ms: float | None = None,
        seed: int | None = None,
    ) -> None:
        """Shape later answers like a cloud store's; an argument left out keeps its value.

        `latency_ms`: wait before every answer's first byte. `bandwidth_mbps`: stream each
        response body at most this many MB/s (10^6 bytes; 0: unlimited); concurrent
        responses each get the full rate. `tail_rate`: this fraction of answers (seeded
        draws) waits `tail_ms` more before its first byte. `seed`: restart the tail's
        draws from this seed (so runs compared side by side see the same sequence).
        """
        for name, value in (
            ("latency_ms", latency_ms),
            ("bandwidth_mbps", bandwidth_mbps),
            ("tail_ms", tail_ms),
        ):
            if value is not None and not value >= 0:
                raise ValueError(f"{name} must be >= 0, not {value!r}")
        if tail_rate is not None and not 0 <= tail_rate <= 1:
            raise ValueError(f"tail_rate must be within [0, 1], not {tail_rate!r}")
        if latency_ms is not None:
            self._latency_s = latency_ms / 1000
        if bandwidth_mbps is not None:
            self._bandwidth_bps = bandwidth_mbps * 1e6
        if tail_rate is not None:
            self._tail_rate = tail_rate
        if tail_ms is not None:
            self._tail_s = tail_ms / 1000
        if seed is not None:
            with self._lock:
                self._tail_rng.seed(seed)

    def network(self) -> dict[str, float]:
        """The shaping in force: `latency_ms`, `bandwidth_mbps`, `tail_rate`, `tail_ms`."""
        return {
            "latency_ms": self._latency_s * 1000,
            "bandwidth_mbps": self._bandwidth_bps / 1e6,
            "tail_rate": self._tail_rate,
            "tail_ms": self._tail_s * 1000,
        }

    def inject(
        self,
        kind: str,
        *,
        count: int | None = None,
        rate: float | None = None,
        key_glob: str | None = None,
        methods: list[str] | tuple[str, ...] | None = None,
        status: int = 503,
        delay_s: float = 1.0,
    ) -> Fault:
        """Add a fault rule.

        `kind`: "status" (answer `status` with an S3 XML error), "reset" (abort the
        connection), "truncate" (send half the body, then close), "slow" (send the body
        in pieces spread over `delay_s`), "late" (hold the whole answer back `delay_s`
        before its first byte, as the slow tail does). `count`: the next N matching
        requests; `rate`: each matching request with this probability (seeded RNG);
        neither: every one.
        `key_glob` (fnmatch on the key) and `methods` restrict which requests match.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        fault = Fault(
            kind,
            count,
            rate,
            key_glob,
            None if methods is None else tuple(m.upper() for m in methods),
            status,
            delay_s,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        with self._lock:
            self._faults.clear()

    def _pick_fault(self, method: str, key: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if not fault.matches(method, key):
                    continue
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                elif fault.rate is not None and self._rng.random() >= fault.rate:
                    continue
                self._stats.faults += 1
                return fault
        return None

    # -- HTTP plumbing -----------------------------------------------------------------

    @staticmethod
    async def _add_cors(request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(_CORS)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/_emulator/"):
            return await handler(request)  # type: ignore[no-any-return]
        with self._lock:
            s = self._stats
            s.requests += 1
            s.by_method[request.method] += 1
            s.by_kind[self._kind(request)] += 1
            s.inflight += 1
            s.peak_inflight = max(s.peak_inflight, s.inflight)
        status = 0
        try:
            delay = self._latency_s
            if self._list_latency_s and self._kind(request) == "list":
                delay += self._list_latency_s
            if self._tail_rate > 0:
                with self._lock:
                    slow = self._tail_rng.random() < self._tail_rate
                    self._stats.tails += slow
                delay += self._tail_s if slow else 0.0
            if delay > 0:
                await _hold(request, delay)
            try:
                response: web.StreamResponse = await handler(request)
            except ConnectionResetError:
                # The client has gone mid-answer (the losing copy of a hedged read):
                # nobody to answer, not a server error.
                raise asyncio.CancelledError from None
            status = response.status
            if isinstance(response, web.Response) and request.method != "HEAD":
                with self._lock:
                    self._stats.bytes_read += response.content_length or 0
            return response
        finally:
            with self._lock:
                self._stats.inflight -= 1
                if status:
                    self._stats.by_status[status] += 1

    def _kind(self, request: web.Request) -> str:
        method, query = request.method, request.query
        key = request.path.lstrip("/").partition("/")[2]
        if method == "GET":
            if not key:
                return "list"
            return "get_range" if "Range" in request.headers else "get"
        if method == "POST":
            return (
                "delete_objects"
                if "delete" in query
                else "create_multipart"
                if "uploads" in query
                else "complete_multipart"
            )
        if method == "PUT":
            return "upload_part" if "uploadId" in query else "put"
        if method == "DELETE":
            return "abort_multipart" if "uploadId" in query else "delete"
        return method.lower()

    async def _http_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _http_reset(self, request: web.Request) -> web.Response:
        self.reset_stats()
        return web.json_response(self.stats())

    async def _http_faults(self, request: web.Request) -> web.Response:
        spec = await request.json()
        if spec.pop("clear", False):
            self.clear_faults()
        if "kind" in spec:
            try:
                self.inject(spec.pop("kind"), **spec)
            except (TypeError, ValueError) as exc:
                return web.json_response({"error": str(exc)}, status=400)
        with self._lock:
            return web.json_response([asdict(f) for f in self._faults])

    async def _http_latency(self, request: web.Request) -> web.Response:
        self.set_latency(float((await request.json())["ms"]))
        return web.json_response({"latency_ms": self._latency_s * 1000})

    async def _http_network(self, request: web.Request) -> web.Response:
        try:
            self.set_network(**await request.json())
        except (TypeError, ValueError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(self.network())

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        bucket, _, key = request.path.lstrip("/").partition("/")
        method = request.method
        try:
            if method == "OPTIONS":
                return self._preflight(request)
            if bucket != self._bucket:
                raise S3Error(404, f"bucket {bucket!r} does not exist", code="NoSuchBucket")
            fault = self._pick_fault(method, key)
            if fault is not None and fault.kind == "status":
                raise S3Error(fault.status, f"injected fault on {key!r}", key=key)
            if fault is not None and fault.kind == "reset":
                assert request.transport is not None
                request.transport.abort()
                raise asyncio.CancelledError  # nothing left to answer on
            if fault is not None and fault.kind == "late":
                await _hold(request, fault.delay_s)
                fault = None  # the answer itself is whole and on time once it begins
            response = await self._handle(request, method, key)
            if fault is not None and isinstance(response, web.Response) and response.body:
                return await self._faulty_body(request, response, fault)
            if self._bandwidth_bps > 0 and isinstance(response, web.Response) and response.body:
                return await self._paced_body(request, response)
            return response
        except S3Error as exc:
            return error_response(exc.status, exc.code, str(exc), exc.key or key, bucket, method)

    def _preflight(self, request: web.Request) -> web.Response:
        asked = request.headers.get("Access-Control-Request-Headers", "*")
        return web.Response(
            status=204,
            headers={
                "Access-Control-Allow-Methods": "GET, HEAD, PUT, POST, DELETE, OPTIONS",
                "Access-Control-Allow-Headers": asked,
                "Access-Control-Max-Age": "3600",
            },
        )

    async def _faulty_body(
        self, request: web.Request, response: web.Response, fault: Fault
    ) -> web.StreamResponse:
        """Send `response` with its body truncated (then close) or trickled slowly."""
        body = bytes(response.body)  # type: ignore[arg-type]
        stream = web.StreamResponse(status=response.status, headers=response.headers)
        stream.content_length = len(body)
        await stream.prepare(request)
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
        with self._lock:
            self._stats.bytes_read += len(body)
        return stream

    async def _paced_body(self, request: web.Request, response: web.Response) -> web.StreamResponse:
        """Send `response`'s body no faster than the bandwidth cap allows."""
        body = memoryview(bytes(response.body))  # type: ignore[arg-type]
        stream = web.StreamResponse(status=response.status, headers=response.headers)
        stream.content_length = len(body)
        await stream.prepare(request)
        pacer = _Pacer(self._bandwidth_bps)
        for at in range(0, len(body), _PACE_BYTES):
            piece = body[at : at + _PACE_BYTES]
            await pacer.wait(len(piece))
            await stream.write(piece)
            with self._lock:
                self._stats.bytes_read += len(piece)
        await stream.write_eof()
        return stream

    # -- S3 operations -----------------------------------------------------------------

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if not key or any(p in ("", ".", "..") for p in parts) or parts[0] == TMP_DIR:
            raise S3Error(400, f"invalid key {key!r}", code="InvalidArgument")
        return self.root.joinpath(*parts)

    def _check_writable(self, key: str) -> None:
        if self.read_only:
            raise S3Error(403, f"emulator is read-only; cannot write {key!r}", key=key)

    async def _handle(self, request: web.Request, method: str, key: str) -> web.Response:
        query = request.query
        if not key:
            if method == "GET":
                return await asyncio.to_thread(self._list, query)
            if method in ("HEAD", "PUT"):  # HeadBucket / CreateBucket of this bucket
                return web.Response()
            if method == "POST" and "delete" in query:
                return await self._delete_objects(await self._body(request))
        elif method in ("GET", "HEAD"):
            return await self._get(request, key, head=method == "HEAD")
        elif method == "PUT":
            self._check_writable(key)
            body = await self._body(request)
            if "uploadId" in query:
                return self._uploads.upload_part(
                    key, query["uploadId"], int(query["partNumber"]), body
                )
            path = self._path(key)
            condition = None
            if any(name in request.headers for name in PUT_CONDITIONS):
                condition = (self._put_lock, dict(request.headers))
            try:
                await asyncio.to_thread(write_atomic, path, self.root / TMP_DIR, body, condition)
            except S3Error as exc:
                exc.key = key
                raise
            return web.Response(headers=version_headers(path.stat()))
        elif method == "DELETE":
            self._check_writable(key)
            if "uploadId" in query:
                self._uploads.abort(query["uploadId"])
            else:
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    self._path(key).unlink()
            return web.Response(status=204)
        elif method == "POST" and "uploads" in query:
            self._check_writable(key)
            return self._uploads.create(key, self._bucket)
        elif method == "POST" and "uploadId" in query:
            self._check_writable(key)
            body = await self._body(request)
            return await self._uploads.complete(key, query["uploadId"], body, self._bucket)
        raise S3Error(405, f"{method} {request.path_qs} is not supported by the emulator")

    async def _body(self, request: web.Request) -> bytes:
        if self._bandwidth_bps:
            body = await self._paced_read(request)
        else:
            body = await request.read()
            with self._lock:
                self._stats.bytes_written += len(body)
        if request.headers.get("x-amz-content-sha256", "").startswith("STREAMING-"):
            return decode_aws_chunked(body)
        return body

    async def _paced_read(self, request: web.Request) -> bytes:
        """Receive an upload no faster than the bandwidth cap allows."""
        pieces: list[bytes] = []
        pacer = _Pacer(self._bandwidth_bps)
        async for piece in request.content.iter_chunked(_PACE_BYTES):
            pieces.append(piece)
            with self._lock:
                self._stats.bytes_written += len(piece)
            await pacer.wait(len(piece))
        return b"".join(pieces)

    async def _get(self, request: web.Request, key: str, *, head: bool) -> web.Response:
        range_header = None if head else request.headers.get("Range")
        try:
            found = await asyncio.to_thread(
                read_version, self._path(key), range_header, body=not head
            )
        except S3Error as exc:
            exc.key = key
            raise
        if found is None:
            raise S3Error(404, "The specified key does not exist.", key=key)
        st, bounds, body = found
        headers = {
            **version_headers(st),
            "Accept-Ranges": "bytes",
            "Last-Modified": formatdate(st.st_mtime, usegmt=True),
            "Content-Type": "application/octet-stream",
        }
        if head:
            headers["Content-Length"] = str(st.st_size)
            return web.Response(headers=headers)
        status = 200
        if bounds is not None:
            start, stop = bounds
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{st.st_size}"
            status = 206
        if isinstance(body, FileSlice):
            return await self._stream_file(request, body, status, headers)
        return web.Response(status=status, body=body, headers=headers)

    async def _stream_file(
        self, request: web.Request, body: FileSlice, status: int, headers: dict[str, str]
    ) -> web.StreamResponse:
        """Send a large body from its open file piece by piece (then close the file), no
        faster than the bandwidth cap allows."""
        try:
            stream = web.StreamResponse(status=status, headers=headers)
            stream.content_length = body.stop - body.start
            await stream.prepare(request)
            pacer = _Pacer(self._bandwidth_bps)
            at = body.start
            while at < body.stop:
                piece = await asyncio.to_thread(
                    os.pread, body.fd, min(_PACE_BYTES, body.stop - at), at
                )
                if not piece:
                    break
                await pacer.wait(len(piece))
                await stream.write(piece)
                at += len(piece)
                with self._lock:
                    self._stats.bytes_read += len(piece)
            await stream.write_eof()
            return stream
        finally:
            os.close(body.fd)

    async def _delete_objects(self, body: bytes) -> web.Response:
        keys = [
            e.text or ""
            for e in ElementTree.fromstring(body).iter()
            if e.tag.rpartition("}")[2] == "Key"
        ]
        out = []
        for key in keys:
            try:
                self._check_writable(key)
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    self._path(key).unlink()
                out.append(f"<Deleted><Key>{escape(key)}</Key></Deleted>")
            except S3Error as exc:
                out.append(
                    f"<Error><Key>{escape(key)}</Key><Code>{exc.code}</Code>"
                    f"<Message>{escape(str(exc))}</Message></Error>"
                )
        return xml_response(f'<DeleteResult xmlns="{S3_NS}">{"".join(out)}</DeleteResult>')

    def _keys(self, prefix: str) -> list[tuple[str, os.stat_result]]:
        """Every stored key starting with `prefix`, sorted, with its stat."""
        return stored_keys(self.root, prefix)

    def _list(self, query: Any) -> web.Response:
        return list_objects_v2(query, self._bucket, self._keys)
