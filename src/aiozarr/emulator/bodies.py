"""Request bodies coming in: an upload streamed to a temp file in the served folder under
a size cap (never held whole), and the small bodies of control and XML calls read under
a cap of their own.

A body whose `Content-Length` is over the cap is refused (413) before a byte of it is
read, and the connection is closed; one that runs over the cap as it streams (no length
given, or a chunked body) is refused once it does, its temp file removed. A body that
stops arriving for `BODY_IDLE_S` is given up on (408).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from aiohttp import web

from aiozarr.emulator.files import new_temp_file
from aiozarr.emulator.s3 import AwsChunkedDecoder, S3Error

__all__ = [
    "BODY_IDLE_S",
    "SMALL_BODY_BYTES",
    "SPILL_BYTES",
    "Digests",
    "read_small",
    "receive",
]

SPILL_BYTES = 1 << 20  # an upload larger than this goes to a temp file, in pieces of this
SMALL_BODY_BYTES = 1 << 20  # the most a control or XML body may hold
BODY_IDLE_S = 30.0  # a body that sends nothing for this long is given up on
_PIECE = 256 << 10


def too_large(limit: int) -> S3Error:
    """The 413 for a body over `limit`; the connection is closed after it (aiohttp reads
    and drops what is left of the body for a moment first, so the client can read it)."""
    return S3Error(413, f"the request body is larger than the {limit}-byte limit", close=True)


async def _pieces(request: web.Request) -> AsyncIterator[bytes]:
    """The body in pieces as they arrive; raises 408 when it stalls."""
    while True:
        try:
            async with asyncio.timeout(BODY_IDLE_S):
                piece = await request.content.read(_PIECE)
        except TimeoutError:
            raise S3Error(
                408, f"the request body stalled for {BODY_IDLE_S:g} s", close=True
            ) from None
        if not piece:
            return
        yield piece


async def read_small(request: web.Request, limit: int = SMALL_BODY_BYTES) -> bytes:
    """The whole of a body that must be small (XML, JSON): 413 past `limit`."""
    length = request.content_length
    if length is not None and length > limit:
        raise too_large(limit)
    held = bytearray()
    async for piece in _pieces(request):
        held += piece
        if len(held) > limit:
            raise too_large(limit)
    return bytes(held)


async def receive(
    request: web.Request,
    tmp_dir: Path,
    limit: int,
    *,
    pace: Callable[[int], Awaitable[None]] | None = None,
    counted: Callable[[int], None] = lambda n: None,
) -> bytes | Path:
    """An upload's payload: the bytes when it is small, else a temp file in `tmp_dir`
    holding it (the caller renames it into place or removes it). `limit` caps the bytes
    received; `pace(n)` waits until `n` more bytes may have come (a bandwidth cap);
    `counted(n)` is told of every `n` bytes received. `aws-chunked` framing is removed
    on the way."""
    length = request.content_length
    if length is not None and length > limit:
        raise too_large(limit)
    chunked = request.headers.get("x-amz-content-sha256", "").startswith("STREAMING-")
    decoder = AwsChunkedDecoder() if chunked else None
    digests = Digests(request.headers)
    held = bytearray()
    received = decoded = 0
    tmp: Path | None = None
    f: BinaryIO | None = None
    try:
        async for piece in _pieces(request):
            received += len(piece)
            if received > limit:
                raise too_large(limit)
            counted(len(piece))
            if pace is not None:
                await pace(len(piece))
            payload = decoder.feed(piece) if decoder is not None else piece
            decoded += len(payload)
            digests.update(payload)
            held += payload
            if len(held) >= SPILL_BYTES:
                if f is None:  # a new file in a local folder: quick enough for the loop
                    tmp = new_temp_file(tmp_dir)
                    f = open(tmp, "wb")  # noqa: SIM115 - closed by _finish or below
                data, held = bytes(held), bytearray()
                await asyncio.to_thread(f.write, data)
        if decoder is not None:
            _check_complete(decoder, decoded, request.headers.get("x-amz-decoded-content-length"))
        digests.check()
        if f is None:
            return bytes(held)
        await asyncio.to_thread(_finish, f, bytes(held))
        f = None
        assert tmp is not None
        return tmp
    except BaseException:
        if f is not None:
            f.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise


class Digests:
    """The digests an upload declares of its payload (`Content-MD5`, and S3's
    `x-amz-checksum-crc32` / `-sha1` / `-sha256` headers), computed as it streams in and
    checked once it has: a payload that differs is `400 BadDigest`, never stored.
    CRC32C and CRC64NVME, and checksums sent in an aws-chunked trailer, are not checked."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._wanted: list[tuple[str, str, Any]] = []
        for name, make in _DIGESTS.items():
            if name in headers:
                self._wanted.append((name, headers[name].strip(), make()))

    def update(self, data: bytes) -> None:
        for _, _, digest in self._wanted:
            digest.update(data)

    def check(self) -> None:
        for name, declared, digest in self._wanted:
            if base64.b64encode(digest.digest()).decode() != declared:
                raise S3Error(400, f"the payload does not match its {name}", code="BadDigest")


class _Crc32:
    def __init__(self) -> None:
        self._value = 0

    def update(self, data: bytes) -> None:
        self._value = zlib.crc32(data, self._value)

    def digest(self) -> bytes:
        return self._value.to_bytes(4, "big")


_DIGESTS: dict[str, Callable[[], Any]] = {
    "Content-MD5": lambda: hashlib.md5(usedforsecurity=False),
    "x-amz-checksum-crc32": _Crc32,
    "x-amz-checksum-sha1": hashlib.sha1,
    "x-amz-checksum-sha256": hashlib.sha256,
}


def _check_complete(decoder: AwsChunkedDecoder, decoded: int, declared: str | None) -> None:
    """Refuse an aws-chunked body cut short: its framing ends before the final chunk, or
    it decodes to other than the `x-amz-decoded-content-length` it declared (a body
    complete by its `Content-Length` may still be; storing it would lose the object)."""
    if not decoder.finished:
        raise S3Error(
            400, "the aws-chunked body ends before its final chunk", code="IncompleteBody"
        )
    if declared is not None and declared.strip() != str(decoded):
        raise S3Error(
            400,
            f"the aws-chunked body decodes to {decoded} bytes, not the {declared.strip()} "
            "its x-amz-decoded-content-length declares",
            code="IncompleteBody",
        )


def _finish(f: BinaryIO, rest: bytes) -> None:
    with f:
        f.write(rest)
