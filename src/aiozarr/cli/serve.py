"""`aiozarr serve DIR`: serve a directory as an S3 bucket and over plain HTTP (the emulator).

    aiozarr serve ./data --port 8000 --latency-ms 20
    aiozarr serve ./data --latency-ms 20 --bandwidth-mbps 90 --tail-rate 0.02   # cloud-like
    aiozarr serve ./data --allow-writes          # accept PUT, DELETE and uploads
    aiozarr serve ./data --faults                # the /_emulator/... control endpoints

Then `s3://data/...` with `endpoint=http://127.0.0.1:8000`, or `http://127.0.0.1:8000/data/...`
in a browser-based viewer (CORS grants reads to any page). Ctrl-C stops it.

Read-only unless `--allow-writes`, as `python -m http.server` is; writes from other
sites' pages, requests naming another host (DNS rebinding) and keys leading outside the
directory are refused whatever the options (see aiozarr.emulator.server).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiozarr.cli.errors import run_command
from aiozarr.cli.options import Parser

if TYPE_CHECKING:
    from aiozarr.emulator import Emulator

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_DEFAULT_MAX_UPLOAD = 5 << 30  # as aiozarr.emulator.bucket.MAX_UPLOAD_BYTES (lazy import)

__all__ = ["build_parser", "main", "run_serve"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `serve` arguments, added to `parser` (a sub-command's) or a new parser."""
    parser = parser or Parser(
        prog="aiozarr serve", description="Serve a directory as an S3 bucket and over HTTP."
    )
    parser.add_argument("directory", type=Path, help="directory to serve")
    _add_address_options(parser)
    _add_network_options(parser)
    _add_access_options(parser)
    _add_limit_options(parser)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    return parser


def _add_address_options(parser: argparse.ArgumentParser) -> None:
    """Where it listens."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port", type=_port, default=8000, help="port, 0 for any free port (default: %(default)s)"
    )


def _port(text: str) -> int:
    """A `--port`: 0 to 65535 (0: any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535 (0: any free one), not {port}")
    return port


def _add_network_options(parser: argparse.ArgumentParser) -> None:
    """The cloud-like shaping of its answers."""
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="wait before every answer's first byte, in milliseconds (default: %(default)s)",
    )
    parser.add_argument(
        "--bandwidth-mbps",
        type=float,
        default=0.0,
        help="stream each response body at most this many MB/s; concurrent "
        "responses each get the full rate, like separate connections to S3 "
        "(default: %(default)s, unlimited)",
    )
    parser.add_argument(
        "--tail-rate",
        type=float,
        default=0.0,
        help="fraction of answers that wait --tail-ms longer before their "
        "first byte (default: %(default)s)",
    )
    parser.add_argument(
        "--tail-ms",
        type=float,
        default=200.0,
        help="extra wait of the slow tail, in milliseconds (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the slow-tail and fault draws (default: %(default)s)",
    )


def _add_access_options(parser: argparse.ArgumentParser) -> None:
    """What it serves as, and what clients may change: writes, the control endpoints."""
    parser.add_argument(
        "--bucket", default=None, help="bucket name (default: the directory's name)"
    )
    writes = parser.add_mutually_exclusive_group()
    writes.add_argument(
        "--allow-writes",
        dest="read_only",
        action="store_false",
        help="accept PUT, DELETE and multipart uploads (other sites' pages stay refused; "
        "default: read-only)",
    )
    writes.add_argument(
        "--read-only", dest="read_only", action="store_true", help="refuse writes (the default)"
    )
    parser.set_defaults(read_only=True)
    parser.add_argument(
        "--faults",
        action="store_true",
        help="turn on the control endpoints (POST /_emulator/faults, latency, network, "
        "reset) that inject faults and change the network shaping (default: off)",
    )


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    """The bounds on what clients may hold, and the host names they may use."""
    parser.add_argument(
        "--max-upload-bytes",
        type=int,
        default=_DEFAULT_MAX_UPLOAD,
        help="largest PUT body or multipart part accepted, in bytes; larger ones get 413 "
        "(default: %(default)s, 5 GiB as S3)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds a connection has to send its request head, from its start or the "
        "end of its last answer; then it is closed (default: %(default)s)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=1000,
        help="connections held at once; more get 503 (default: %(default)s)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients may reach the server by (repeatable); IP addresses, "
        "localhost and --host always may, other names are refused against DNS rebinding",
    )


async def run_serve(
    directory: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    latency_ms: float = 0.0,
    *,
    bucket: str | None = None,
    read_only: bool = True,
    bandwidth_mbps: float = 0.0,
    tail_rate: float = 0.0,
    tail_ms: float = 200.0,
    seed: int = 0,
    faults: bool = False,
    max_upload_bytes: int = _DEFAULT_MAX_UPLOAD,
    header_timeout: float = 10.0,
    max_connections: int = 1000,
    allowed_hosts: tuple[str, ...] | list[str] = (),
    on_start: Callable[[Emulator], object] | None = None,
) -> None:
    """Serve `directory` until cancelled, printing where; `on_start(emulator)` once up.
    Read-only unless `read_only=False`; the control endpoints only with `faults`."""
    emulator = _emulator(
        Path(directory),
        bucket,
        latency_ms=latency_ms,
        host=host,
        port=port,
        read_only=read_only,
        bandwidth_mbps=bandwidth_mbps,
        tail_rate=tail_rate,
        tail_ms=tail_ms,
        seed=seed,
        control=faults,
        max_upload_bytes=max_upload_bytes,
        header_timeout=header_timeout,
        max_connections=max_connections,
        allowed_hosts=allowed_hosts,
    )
    async with _listening(emulator, host, port) as emu:
        for line in _banner(emu, Path(directory), host, max_connections):
            print(line, flush=True)
        if on_start is not None:
            on_start(emu)
        await asyncio.Event().wait()  # until cancelled (Ctrl-C)


def _emulator(directory: Path, bucket: str | None, **settings: Any) -> Emulator:
    """The emulator over `directory` (its bucket named after it unless `bucket`), made
    with `settings`; a missing directory or a setting out of range is one line."""
    from aiozarr.emulator import Emulator

    if not directory.is_dir():
        raise SystemExit(f"aiozarr serve: {directory} is not a directory")
    name = bucket or directory.resolve().name or "bucket"
    try:
        return Emulator(directory, bucket=name, **settings)
    except (TypeError, ValueError) as exc:
        raise SystemExit(f"aiozarr serve: {exc}") from None


def _banner(emu: Emulator, directory: Path, host: str, max_connections: int) -> list[str]:
    """What `aiozarr serve` prints once it listens: the mode, where to reach it, how."""
    lines = [f"Serving {directory.resolve()} (Ctrl-C to stop)"]
    if emu.read_only:
        lines.append("  mode: read-only (writes refused; --allow-writes accepts them)")
    else:
        lines.append(
            "  mode: writes allowed (PUT, DELETE and uploads change these files; "
            "other sites' pages are refused)"
        )
    if emu.max_connections < max_connections:
        lines.append(
            f"  note: at most {emu.max_connections} connections at once, not "
            f"{max_connections}: the open-file limit (ulimit -n) holds no more"
        )
    if host not in _LOOPBACK:
        lines.append(
            f"  note: listening on {host}: every machine that reaches it can read"
            + ("" if emu.read_only else " and write")
        )
    lines += [
        f"  HTTP: {emu.http_url()}/",
        f"  S3:   {emu.s3_url()}  endpoint={emu.endpoint} (anonymous, path-style)",
        f"  env:  AWS_ENDPOINT_URL={emu.endpoint} (s3://{emu.bucket}/... then needs no options)",
    ]
    if emu.control:
        lines.append(
            f"  faults: on (POST {emu.endpoint}/_emulator/faults, latency, network, reset)"
        )
    lines.append(f"  stats: {emu.endpoint}/_emulator/stats")
    return lines


class PortTakenError(OSError):
    """Another program listens on the port asked for."""


class CannotListenError(OSError):
    """The address asked for is none of this machine's (or names none)."""


@contextlib.asynccontextmanager
async def _listening(emulator: Emulator, host: str, port: int) -> AsyncIterator[Emulator]:
    """`emulator` started, then stopped; a port already in use is `PortTakenError`, an
    address it cannot listen on `CannotListenError`: one line that says what to do
    instead of the socket's traceback."""
    try:
        await emulator.start()
    except OSError as exc:
        await emulator.stop()
        if exc.errno == errno.EADDRINUSE:
            raise PortTakenError(
                f"port {port} on {host} is taken; choose another with --port, "
                "or --port 0 for any free one"
            ) from exc
        # A --host that names no address, or none of this machine's.
        raise CannotListenError(
            f"cannot listen on {host} port {port}: {exc.strerror or exc}; --host takes an "
            "address of this machine (127.0.0.1, 0.0.0.0, ::1) or a name that resolves to one"
        ) from exc
    try:
        yield emulator
    finally:
        await emulator.stop()


def main(argv: list[str] | None = None) -> int:
    """Entry point of `aiozarr serve`; returns the exit status (0 after Ctrl-C, the way
    to stop it; a port already taken is one line and status 1)."""
    parser = build_parser()
    args = parser.parse_args(argv)

    async def body() -> None:
        # Ctrl-C, the way to stop it: asyncio.run cancels this task, and that is status 0.
        # SIGTERM (kill, docker stop, systemd) stops it the same way: its requests in
        # progress end and their temp files are removed.
        task = asyncio.current_task()
        assert task is not None
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on Windows
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await run_serve(
                args.directory,
                args.host,
                args.port,
                args.latency_ms,
                bucket=args.bucket,
                read_only=args.read_only,
                bandwidth_mbps=args.bandwidth_mbps,
                tail_rate=args.tail_rate,
                tail_ms=args.tail_ms,
                seed=args.seed,
                faults=args.faults,
                max_upload_bytes=args.max_upload_bytes,
                header_timeout=args.header_timeout,
                max_connections=args.max_connections,
                allowed_hosts=args.allow_host,
            )

    return run_command(parser.prog, args, body)
