"""The object-store emulator behind `aiozarr serve`: a local directory served as an S3
bucket and over plain HTTP.

    async with Emulator(tmp_path, latency_ms=20) as emu:
        store = obstore.store.S3Store(emu.bucket, **emu.storage_options())

    with Emulator(tmp_path).running_in_thread() as emu:   # sync tests, benchmarks
        ...

One URL space serves both protocols: `/{bucket}/{key}` is a path-style S3 object and
also a plain HTTP file (`emu.http_url(key)`), so obstore's `S3Store` and `HTTPStore`,
browsers and `curl` all read the same files. S3 calls: GET (one `Range`: `a-b`, `a-`,
`-n`), HEAD, PUT, DELETE, DeleteObjects (`POST ?delete`), ListObjects (v1, v2), ListBuckets,
multipart uploads. Signatures are accepted and ignored.

It counts requests (by method and by kind), bytes in and out and requests in flight, and
behaves like a cloud store on request: `latency_ms` before each answer's first byte,
`bandwidth_mbps` as the most each response body streams at, and each request body (an
upload) is received at (every request on its own connection gets the full rate, as with
S3), and a seeded slow tail (`tail_rate` of the answers wait `tail_ms` longer before
their first byte). It injects faults on demand: error statuses, connection resets,
truncated bodies, slow bodies and late answers. Each GET serves one version of its
object even while PUTs replace it. Control endpoints (control.py): `GET /_emulator/stats`
always; the POSTs that change it (reset, faults, latency, network) with `control=True`.

This module is the server: its settings, running it, its addresses, and the path every
request takes (the guard, counting, holding back, faults). What it counts and the
shaping and fault rules in force are serving_conditions.py's; how a shaped or broken answer goes
out is answers.py's; the S3 operations on the folder are bucket.py's.

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
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from aiohttp import web

from aiozarr.emulator.answers import faulty_body, hold, paced_body
from aiozarr.emulator.bodies import SMALL_BODY_BYTES
from aiozarr.emulator.bucket import MAX_UPLOAD_BYTES, Bucket
from aiozarr.emulator.control import add_control_routes
from aiozarr.emulator.faults import FAULT_KINDS, Fault
from aiozarr.emulator.files import path_error
from aiozarr.emulator.guard import Guard
from aiozarr.emulator.listener import BoundedSite
from aiozarr.emulator.s3 import S3Error, error_response
from aiozarr.emulator.serving_conditions import Conditions

__all__ = ["FAULT_KINDS", "MAX_UPLOAD_BYTES", "Emulator", "Fault", "request_kind"]


def _abort(request: web.Request) -> NoReturn:
    """Drop `request`'s connection without an answer (a client that left has none)."""
    if request.transport is not None:
        request.transport.abort()
    raise asyncio.CancelledError  # nothing left to answer on


def request_kind(request: web.Request) -> str:
    """The S3 operation `request` asks for, as the counters name it (`by_kind`)."""
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
        self._host, self._port = host, port
        self.control = control
        if max_upload_bytes < 0:
            raise ValueError(f"max_upload_bytes must be >= 0, not {max_upload_bytes!r}")
        if not header_timeout > 0:
            raise ValueError(f"header_timeout must be > 0, not {header_timeout!r}")
        self._header_timeout = header_timeout
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, not {max_connections!r}")
        self._max_connections = max_connections
        self._guard = Guard(host, allowed_hosts)
        self._conditions = Conditions(
            latency_ms=latency_ms,
            seed=seed,
            bandwidth_mbps=bandwidth_mbps,
            tail_rate=tail_rate,
            tail_ms=tail_ms,
        )
        self._bucket = Bucket(
            self.root,
            bucket,
            self._conditions,
            read_only=read_only,
            max_upload_bytes=max_upload_bytes,
        )
        self._runner: web.AppRunner | None = None

    @property
    def read_only(self) -> bool:
        """Whether writes are refused (403)."""
        return self._bucket.read_only

    @read_only.setter
    def read_only(self, value: bool) -> None:
        self._bucket.read_only = value

    @property
    def max_upload_bytes(self) -> int:
        """The largest PUT body or multipart part accepted (larger ones get 413)."""
        return self._bucket.max_upload_bytes

    @max_upload_bytes.setter
    def max_upload_bytes(self, value: int) -> None:
        self._bucket.max_upload_bytes = value

    # -- running -----------------------------------------------------------------------

    async def start(self) -> Emulator:
        """Start serving in the running loop; returns self."""
        app = web.Application(
            client_max_size=SMALL_BODY_BYTES,  # uploads stream; nothing else is larger
            middlewares=[self._guard_middleware, self._middleware],
        )
        app.on_response_prepare.append(self._add_cors)
        add_control_routes(app, self._conditions, control=self.control)
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
        self._bucket.open()
        site = BoundedSite(self._runner, self._host, self._port, self._max_connections)
        await site.start()
        self._port, self._max_connections = site.port, site.max_connections
        return self

    async def listen_also(self, port: int = 0, *, reuse_port: bool = False) -> int:
        """Serve on another port of the same host too (`port=0`: a free one) and return
        it. `reuse_port`: processes serving the same folder share the port, and the
        system spreads connections among them; each keeps its own port for its control
        endpoints and counters."""
        if self._runner is None:
            raise RuntimeError("start the emulator before it listens on another port")
        site = BoundedSite(
            self._runner, self._host, port, self._max_connections, reuse_port=reuse_port
        )
        await site.start()
        return site.port

    async def stop(self) -> None:
        """Stop serving and close open connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._bucket.close()

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
        return self._bucket.name

    @property
    def port(self) -> int:
        return self._port

    @property
    def max_connections(self) -> int:
        """The connections held at once, more answered 503: as asked, or once started,
        fewer where the open-file limit cannot hold that many."""
        return self._max_connections

    @property
    def connections(self) -> int:
        """The connections the server holds now, idle ones included (those over
        `max_connections`, answered 503 and closed, are not held)."""
        server = self._runner.server if self._runner is not None else None
        return 0 if server is None else len(server.connections)

    @property
    def endpoint(self) -> str:
        """`http://host:port`, the S3 endpoint (an IPv6 address in brackets, as URLs
        write it)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    def s3_url(self, path: str = "") -> str:
        """`s3://bucket/path` (use with `storage_options()`)."""
        return f"s3://{self.bucket}/{path.lstrip('/')}"

    def http_url(self, path: str = "") -> str:
        """The plain-HTTP URL of `path` in the bucket (of the bucket itself for "")."""
        path = path.lstrip("/")
        return f"{self.endpoint}/{self.bucket}" + (f"/{path}" if path else "")

    def storage_options(self) -> dict[str, Any]:
        """obstore `S3Store` settings that reach this emulator (anonymous, plain HTTP)."""
        return {
            "endpoint": self.endpoint,
            "region": "us-east-1",
            "skip_signature": True,
            "virtual_hosted_style_request": False,
            "client_options": {"allow_http": True},
        }

    # -- counters, latency, faults (serving_conditions.py) -----------------------------

    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters (plain dicts and ints; JSON-ready)."""
        return self._conditions.stats()

    def reset_stats(self) -> None:
        """Zero the counters (requests in flight stay counted)."""
        self._conditions.reset_stats()

    def set_latency(self, ms: float) -> None:
        """Delay every later answer by `ms` milliseconds."""
        self._conditions.set_latency(ms)

    def set_list_latency(self, ms: float) -> None:
        """Delay every later listing page (one ListObjectsV2 answer) by `ms` more
        milliseconds: a large listing of many slow pages."""
        self._conditions.set_list_latency(ms)

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
        self._conditions.set_network(
            latency_ms=latency_ms,
            bandwidth_mbps=bandwidth_mbps,
            tail_rate=tail_rate,
            tail_ms=tail_ms,
            seed=seed,
        )

    def network(self) -> dict[str, float]:
        """The shaping in force: `latency_ms`, `bandwidth_mbps`, `tail_rate`, `tail_ms`."""
        return self._conditions.network()

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
        before its first byte, as the slow tail does), "lost" (carry the request out,
        then abort the connection: a write that landed, its answer never seen).
        `count`: the next N matching requests; `rate`: each matching request with this
        probability (seeded RNG); neither: every one.
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
        return Conditions.make_fault(kind, **options)

    def add_fault(self, fault: Fault) -> Fault:
        """Add a rule made by `make_fault`."""
        return self._conditions.add_fault(fault)

    def faults(self) -> list[Fault]:
        """The rules in force, in the order they are tried."""
        return self._conditions.faults()

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        self._conditions.clear_faults()

    # -- the path of a request ---------------------------------------------------------

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
        """Count the request, hold its answer back as the shaping says, and count the
        answer's status and (whole) body."""
        if request.path.startswith("/_emulator/"):
            return await handler(request)  # type: ignore[no-any-return]
        conditions = self._conditions
        kind = request_kind(request)
        began = conditions.request_started(request.method, kind)
        status = 0
        try:
            delay = conditions.first_byte_delay(kind)
            if delay > 0:
                await hold(request, delay)
            try:
                response: web.StreamResponse = await handler(request)
            except ConnectionResetError:
                # The client has gone mid-answer (the losing copy of a hedged read):
                # nobody to answer, not a server error.
                raise asyncio.CancelledError from None
            status = response.status
            if isinstance(response, web.Response) and request.method != "HEAD":
                conditions.count_read(response.content_length or 0)
            return response
        finally:
            conditions.request_finished(began, status)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        """The bucket's answer to `request`, broken or paced as a fault or the bandwidth
        cap says; an S3 error answer when it fails."""
        bucket, _, key = request.path.lstrip("/").partition("/")
        method = request.method
        conditions = self._conditions
        try:
            if method == "OPTIONS":
                return Guard.preflight(request)
            if not bucket and method == "GET":
                return self._bucket.list_buckets()
            if bucket != self.bucket:
                raise S3Error(404, f"bucket {bucket!r} does not exist", code="NoSuchBucket")
            fault = conditions.pick_fault(method, key)
            if fault is not None and fault.kind == "status":
                raise S3Error(fault.status, f"injected fault on {key!r}", key=key)
            if fault is not None and fault.kind == "reset":
                _abort(request)
            if fault is not None and fault.kind == "late":
                await hold(request, fault.delay_s)
                fault = None  # the answer itself is whole and on time once it begins
            response = await self._bucket.handle(request, method, key)
            if fault is not None and fault.kind == "lost":
                _abort(request)
            if not isinstance(response, web.Response) or not response.body:
                return response
            if fault is not None:
                return await faulty_body(request, response, fault, conditions.count_read)
            if conditions.bandwidth_bps > 0:
                return await paced_body(
                    request, response, conditions.bandwidth_bps, conditions.count_read
                )
            return response
        except ConnectionError:
            raise  # the client has gone: nobody to answer (the middleware's to handle)
        except (S3Error, OSError) as raised:
            exc = raised if isinstance(raised, S3Error) else path_error(raised, method)
            answer = error_response(
                exc.status, exc.code, str(exc), exc.key or key, bucket, method, exc.headers
            )
            if exc.close:
                answer.force_close()
            return answer
