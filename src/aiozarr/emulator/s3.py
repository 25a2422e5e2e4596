"""The S3 wire format the emulator speaks: errors as S3 XML, XML answers, `Range`
headers, `aws-chunked` upload bodies."""

from __future__ import annotations

import uuid
from xml.sax.saxutils import escape

from aiohttp import web

__all__ = [
    "ERROR_CODES",
    "S3_NS",
    "S3Error",
    "decode_aws_chunked",
    "error_response",
    "parse_range",
    "xml_response",
]

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ERROR_CODES = {
    400: "InvalidRequest",
    403: "AccessDenied",
    404: "NoSuchKey",
    405: "MethodNotAllowed",
    412: "PreconditionFailed",
    416: "InvalidRange",
    500: "InternalError",
    503: "SlowDown",
}


class S3Error(Exception):
    def __init__(self, status: int, message: str, *, key: str = "", code: str = "") -> None:
        super().__init__(message)
        self.status, self.key, self.code = status, key, code or ERROR_CODES.get(status, "Error")


def error_response(
    status: int, code: str, message: str, key: str, bucket: str, method: str
) -> web.Response:
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
        f"<Message>{escape(message)}</Message><Key>{escape(key)}</Key>"
        f"<BucketName>{escape(bucket)}</BucketName>"
        f"<RequestId>{uuid.uuid4().hex[:16]}</RequestId></Error>"
    )
    if method == "HEAD":
        return web.Response(status=status)
    return web.Response(status=status, body=body.encode(), content_type="application/xml")


def xml_response(body: str) -> web.Response:
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n{body}'
    return web.Response(body=text.encode(), content_type="application/xml")


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """`(start, stop)` for one `bytes=` range; None: serve everything; raises on 416."""
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return None  # like S3: anything but one byte range gets the whole object
    first, _, last = spec.strip().partition("-")
    try:
        if first == "":
            n = int(last)
            if n <= 0 or size == 0:
                raise S3Error(416, f"suffix range {header!r} of a {size}-byte object")
            return max(size - n, 0), size
        start = int(first)
        stop = size if last == "" else min(int(last) + 1, size)
    except ValueError:
        return None
    if start >= size or stop <= start:
        raise S3Error(416, f"range {header!r} not satisfiable for a {size}-byte object")
    return start, stop


def decode_aws_chunked(body: bytes) -> bytes:
    """The payload of a `STREAMING-*` upload: `hex-size;chunk-signature=...` framed chunks."""
    out, pos = bytearray(), 0
    while pos < len(body):
        end = body.index(b"\r\n", pos)
        size = int(body[pos:end].split(b";")[0], 16)
        if size == 0:
            break
        out += body[end + 2 : end + 2 + size]
        pos = end + 2 + size + 2
    return bytes(out)
