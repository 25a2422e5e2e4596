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
uploads. Signatures are accepted and ignored.

It counts requests (by method and by kind), bytes in and out and requests in flight, and
behaves like a cloud store on request: `latency_ms` before each answer's first byte,
`bandwidth_mbps` as the most each response body streams at, and each request body (an
upload) is received at (every request on its own connection gets the full rate, as with
S3), and a seeded slow tail (`tail_rate` of the answers wait `tail_ms` longer before
their first byte). It injects faults on demand: error statuses, connection resets,
truncated bodies, slow bodies and late answers. Each GET serves one version of its
object even while PUTs replace it. Control endpoints (control.py): `GET /_emulator/stats`
always; the POSTs that change it (reset, faults, latency, network) with `control=True`.

It is safe to run on a machine with a browser (guard.py, paths.py): every key and
listing prefix stays inside the served folder (symlinks out are neither read, listed nor
written through); `Host` must name this server (no DNS rebinding); writes and control
calls from another site's pages are refused, and CORS grants reads only; `read_only`
refuses writes (`aiozarr serve` is read-only unless `--allow-writes`). Its resources are
bounded: uploads stream to a temp file under `max_upload_bytes` (bodies.py), a
connection must send its request head within `header_timeout` seconds, at most
`max_connections` are held (listener.py), and listings are paged (1,000 keys at most)
and walk the disk on threads of their own, so they never hold up other requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.bodies import SMALL_BODY_BYTES, read_small, receive
from aiozarr.emulator.control import add_control_routes
from aiozarr.emulator.faults import FAULT_KINDS, MAX_DELAY_S, Fault, check_number, make_fault
from aiozarr.emulator.files import (
    PUT_CONDITIONS,
    TMP_DIR,
    FileSlice,
    move_into_place,
    read_version,
    version_headers,
    write_atomic,
)
from aiozarr.emulator.guard import Guard
from aiozarr.emulator.listener import BoundedSite
from aiozarr.emulator.listing import list_objects_v2
from aiozarr.emulator.multipart import MultipartUploads
from aiozarr.emulator.paths import object_path
from aiozarr.emulator.s3 import S3_NS, S3Error, error_response, parse_xml, xml_response

__all__ = ["FAULT_KINDS", "MAX_UPLOAD_BYTES", "Emulator", "Fault"]

MAX_UPLOAD_BYTES = 5 << 30  # S3's limit on one PUT (and on one part of a multipart upload)
_PACE_BYTES = 256 << 10  # a bandwidth-capped body goes out in pieces of at most this
_LISTING_THREADS = 2  # listings walk the disk here, apart from the reads' threads
_MAX_DELETE_KEYS = 1000  # S3's limit on one DeleteObjects


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
        control: bool = True,
        max_upload_bytes: int = MAX_UPLOAD_BYTES,
        header_timeout: float = 10.0,
        max_connections: int = 1000,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._bucket = bucket
        self._host, self._port = host, port
        self._latency_s = check_number("latency_ms", latency_ms) / 1000
        self._list_latency_s = 0.0
        self.read_only = read_only
        self.control = control
        if max_upload_bytes < 0:
            raise ValueError(f"max_upload_bytes must be >= 0, not {max_upload_bytes!r}")
        self.max_upload_bytes = max_upload_bytes
        if not header_timeout > 0:
            raise ValueError(f"header_timeout must be > 0, not {header_timeout!r}")
        self._header_timeout = header_timeout
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, not {max_connections!r}")
        self._max_connections = max_connections
        self._guard = Guard(host, allowed_hosts)
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
        self._listing_pool: ThreadPoolExecutor | None = None

    # -- running -----------------------------------------------------------------------

    async def start(self) -> Emulator:
        """Start serving in the running loop; returns self."""
        app = web.Application(
            client_max_size=SMALL_BODY_BYTES,  # uploads stream; nothing else is larger
            middlewares=[self._guard_middleware, self._middleware],
        )
        app.on_response_prepare.append(self._add_cors)
        add_control_routes(app, self, control=self.control)
        app.router.add_route("*", "/{path:.*}", self._dispatch)
        self._runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=0.5,
            keepalive_timeout=self._header_timeout,
            lingering_time=2.0,  # the most spent reading and dropping a refused body
        )
        await self._runner.setup()
        self._listing_pool = ThreadPoolExecutor(_LISTING_THREADS, "aiozarr-emulator-listing")
        site = BoundedSite(self._runner, self._host, self._port, self._max_connections)
        await site.start()
        self._port = site.port
        return self

    async def stop(self) -> None:
        """Stop serving and close open connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._listing_pool is not None:
            self._listing_pool.shutdown(wait=False, cancel_futures=True)
            self._listing_pool = None

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
        self._latency_s = check_number("ms", ms, high=MAX_DELAY_S * 1000) / 1000

    def set_list_latency(self, ms: float) -> None:
        """Delay every later listing page (one ListObjectsV2 answer) by `ms` more
        milliseconds: a large listing of many slow pages."""
        self._list_latency_s = check_number("ms", ms, high=MAX_DELAY_S * 1000) / 1000

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
        for name, value, high in (
            ("latency_ms", latency_ms, MAX_DELAY_S * 1000),
            ("bandwidth_mbps", bandwidth_mbps, math.inf),
            ("tail_ms", tail_ms, MAX_DELAY_S * 1000),
            ("tail_rate", tail_rate, 1),
        ):
            if value is not None:
                check_number(name, value, high=high)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an integer, not {seed!r}")
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
        return self.add_fault(
            self.make_fault(
                kind,
                count=count,
                rate=rate,
                key_glob=key_glob,
                methods=methods,
                status=status,
                delay_s=delay_s,
            )
        )

    @staticmethod
    def make_fault(kind: str, **options: Any) -> Fault:
        """The rule `inject` would add, its arguments checked (ValueError, TypeError)."""
        return make_fault(kind, **options)

    def add_fault(self, fault: Fault) -> Fault:
        """Add a rule made by `make_fault`."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def faults(self) -> list[Fault]:
        """The rules in force, in the order they are tried."""
        with self._lock:
            return list(self._faults)

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
        Guard.add_cors(request, response)

    @web.middleware
    async def _guard_middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Refuse (403) a foreign `Host` and a cross-site write, before anything else."""
        reason = self._guard.refusal(request)
        if reason is not None:
            return web.Response(status=403, text=reason + "\n")
        return await handler(request)  # type: ignore[no-any-return]

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

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        bucket, _, key = request.path.lstrip("/").partition("/")
        method = request.method
        try:
            if method == "OPTIONS":
                return Guard.preflight(request)
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
            answer = error_response(exc.status, exc.code, str(exc), exc.key or key, bucket, method)
            if exc.close:
                answer.force_close()
            return answer

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
        """Where `key` lives: the one key check (paths.py) every operation makes."""
        return object_path(self.root, key)

    def _check_writable(self, key: str) -> None:
        if self.read_only:
            raise S3Error(
                403, f"the server is read-only; cannot write {key!r} (--allow-writes)", key=key
            )

    async def _handle(self, request: web.Request, method: str, key: str) -> web.Response:
        query = request.query
        if method not in ("GET", "HEAD"):
            self._check_writable(key)  # before a byte of the body is read
        if not key:
            if method == "GET":
                return await self._list(query)
            if method in ("HEAD", "PUT"):  # HeadBucket / CreateBucket of this bucket
                return web.Response()
            if method == "POST" and "delete" in query:
                return await self._delete_objects(await self._small_body(request))
        elif method in ("GET", "HEAD"):
            return await self._get(request, key, head=method == "HEAD")
        elif method == "PUT" and "uploadId" in query:
            number = self._uploads.check_part(key, query["uploadId"], query.get("partNumber"))
            body = await self._receive(request)
            return await self._uploads.upload_part(key, query["uploadId"], number, body)
        elif method == "PUT":
            path = self._path(key)
            body = await self._receive(request)
            condition = None
            if any(name in request.headers for name in PUT_CONDITIONS):
                condition = (self._put_lock, dict(request.headers))
            try:
                if isinstance(body, Path):
                    await asyncio.to_thread(move_into_place, body, path, condition)
                else:
                    await asyncio.to_thread(
                        write_atomic, path, self.root / TMP_DIR, body, condition
                    )
            except S3Error as exc:
                exc.key = key
                raise
            return web.Response(headers=version_headers(path.stat()))
        elif method == "DELETE":
            if "uploadId" in query:
                self._uploads.abort(query["uploadId"])
            else:
                path = self._path(key)
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    path.unlink()
            return web.Response(status=204)
        elif method == "POST" and "uploads" in query:
            return self._uploads.create(key, self._bucket)
        elif method == "POST" and "uploadId" in query:
            body = await self._small_body(request)
            return await self._uploads.complete(key, query["uploadId"], body, self._bucket)
        raise S3Error(405, f"{method} {request.path_qs} is not supported by the emulator")

    def _count_written(self, nbytes: int) -> None:
        with self._lock:
            self._stats.bytes_written += nbytes

    async def _receive(self, request: web.Request) -> bytes | Path:
        """An upload's payload, streamed under `max_upload_bytes` (a temp file when large)
        and no faster than the bandwidth cap allows."""
        pace = _Pacer(self._bandwidth_bps).wait if self._bandwidth_bps else None
        return await receive(
            request,
            self.root / TMP_DIR,
            self.max_upload_bytes,
            pace=pace,
            counted=self._count_written,
        )

    async def _small_body(self, request: web.Request) -> bytes:
        body = await read_small(request)
        self._count_written(len(body))
        return body

    async def _get(self, request: web.Request, key: str, *, head: bool) -> web.Response:
        range_header = None if head else request.headers.get("Range")
        try:
            found = await asyncio.to_thread(
                lambda: read_version(self._path(key), range_header, body=not head)
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
        keys = [e.text or "" for e in parse_xml(body) if e.tag.rpartition("}")[2] == "Key"]
        if len(keys) > _MAX_DELETE_KEYS:
            raise S3Error(400, f"at most {_MAX_DELETE_KEYS} keys per request", code="MalformedXML")
        out = []
        for key in keys:
            try:
                self._check_writable(key)
                path = self._path(key)
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    path.unlink()
                out.append(f"<Deleted><Key>{escape(key)}</Key></Deleted>")
            except S3Error as exc:
                out.append(
                    f"<Error><Key>{escape(key)}</Key><Code>{exc.code}</Code>"
                    f"<Message>{escape(str(exc))}</Message></Error>"
                )
        return xml_response(f'<DeleteResult xmlns="{S3_NS}">{"".join(out)}</DeleteResult>')

    async def _list(self, query: Any) -> web.Response:
        """A listing page, walked on the listing threads (never on the loop, nor on the
        threads that serve reads)."""
        assert self._listing_pool is not None
        return await asyncio.get_running_loop().run_in_executor(
            self._listing_pool, list_objects_v2, query, self._bucket, self.root
        )
