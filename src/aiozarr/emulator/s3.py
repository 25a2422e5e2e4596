"""The S3 wire format the emulator speaks: errors as S3 XML, XML answers, `Range`
headers, `aws-chunked` upload bodies (decoded as they stream in)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from aiohttp import web

__all__ = [
    "ERROR_CODES",
    "S3_NS",
    "AwsChunkedDecoder",
    "S3Error",
    "decode_aws_chunked",
    "error_response",
    "parse_range",
    "parse_xml",
    "xml_response",
    "xml_text",
]

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ERROR_CODES = {
    400: "InvalidRequest",
    403: "AccessDenied",
    404: "NoSuchKey",
    405: "MethodNotAllowed",
    408: "RequestTimeout",
    412: "PreconditionFailed",
    413: "EntityTooLarge",
    415: "UnsupportedMediaType",
    416: "InvalidRange",
    500: "InternalError",
    501: "NotImplemented",
    503: "SlowDown",
}


class S3Error(Exception):
    """An S3 error answer; `close`: close the connection after it (the rest of the
    request's body is not worth reading); `headers`: the answer's own (a 416's
    `Content-Range`)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        key: str = "",
        code: str = "",
        close: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.key, self.code = status, key, code or ERROR_CODES.get(status, "Error")
        self.close = close
        self.headers = dict(headers or {})


def error_response(
    status: int,
    code: str,
    message: str,
    key: str,
    bucket: str,
    method: str,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
        f"<Message>{xml_text(message)}</Message><Key>{xml_text(key)}</Key>"
        f"<BucketName>{escape(bucket)}</BucketName>"
        f"<RequestId>{uuid.uuid4().hex[:16]}</RequestId></Error>"
    )
    if method == "HEAD":
        return web.Response(status=status, headers=headers)
    return web.Response(
        status=status, body=body.encode(), content_type="application/xml", headers=headers
    )


#: What XML 1.0 cannot carry, even escaped: C0 controls but tab, LF and CR; surrogates;
#: U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` escaped for XML, what XML cannot carry percent-encoded (a refused key in an
    error answer must not break the client's parser)."""
    return escape(_NOT_XML.sub(lambda m: f"%{ord(m.group()):X}", text))


def xml_response(body: str) -> web.Response:
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n{body}'
    return web.Response(body=text.encode(), content_type="application/xml")


def parse_xml(body: bytes) -> list[ElementTree.Element]:
    """Every element of a request's XML body, in document order (400 if not XML)."""
    try:
        return list(ElementTree.fromstring(body).iter())
    except ElementTree.ParseError as exc:
        raise S3Error(400, f"the request body is not XML: {exc}", code="MalformedXML") from None


#: One byte range as RFC 9110 writes it: ASCII digits only (`int` takes `+`, `_`, spaces
#: and other scripts' digits), a first position, a last, or a suffix length.
_RANGE = re.compile(r"bytes=([0-9]*)-([0-9]*)", re.ASCII)


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """`(start, stop)` for one `bytes=` range; None: serve everything (a range that is
    not one valid byte range is ignored, as RFC 9110 and S3 do); raises on 416, whose
    answer says the object's size (`Content-Range: bytes */SIZE`, as S3's does)."""
    unsatisfiable = {"Content-Range": f"bytes */{size}"}
    found = _RANGE.fullmatch(header.strip())
    if found is None or found.group(1) == found.group(2) == "":
        return None
    first, last = found.groups()
    if first == "":
        n = int(last)
        if n <= 0 or size == 0:
            raise S3Error(
                416, f"suffix range {header!r} of a {size}-byte object", headers=unsatisfiable
            )
        return max(size - n, 0), size
    start = int(first)
    if last != "" and int(last) < start:
        return None  # a last position before the first: invalid, so ignored
    stop = size if last == "" else min(int(last) + 1, size)
    if start >= size:
        raise S3Error(
            416,
            f"range {header!r} not satisfiable for a {size}-byte object",
            headers=unsatisfiable,
        )
    return start, stop


def decode_aws_chunked(body: bytes) -> bytes:
    """The payload of a whole `STREAMING-*` upload body (400 when it is cut short)."""
    decoder = AwsChunkedDecoder()
    payload = decoder.feed(body)
    if not decoder.finished:
        raise S3Error(
            400, "the aws-chunked body ends before its final chunk", code="IncompleteBody"
        )
    return payload


class AwsChunkedDecoder:
    """The payload of a `STREAMING-*` upload, `hex-size;chunk-signature=...` framed
    chunks, decoded piece by piece as the body arrives (signatures are not checked)."""

    _MAX_LINE = 4096

    def __init__(self) -> None:
        self._pending = bytearray()  # bytes of a header line not complete yet
        self._data_left = 0  # payload bytes of the current chunk still to come
        self._crlf_left = 0  # bytes of the CRLF after a chunk's payload still to come
        self._done = False

    @property
    def finished(self) -> bool:
        """Whether the final (0-byte) chunk has come: a body that ends before it was cut
        short, whatever its `Content-Length` said."""
        return self._done

    def feed(self, data: bytes) -> bytes:
        """The payload bytes in `data` (the next piece of the body)."""
        out = bytearray()
        pos, size = 0, len(data)
        while pos < size and not self._done:
            if self._data_left:
                take = min(self._data_left, size - pos)
                out += data[pos : pos + take]
                self._data_left -= take
                pos += take
                if not self._data_left:
                    self._crlf_left = 2
            elif self._crlf_left:
                skip = min(self._crlf_left, size - pos)
                self._crlf_left -= skip
                pos += skip
            else:
                end = data.find(b"\n", pos)
                if end < 0:
                    self._pending += data[pos:]
                    pos = size
                    if len(self._pending) > self._MAX_LINE:
                        raise S3Error(400, "malformed aws-chunked body: header line too long")
                    continue
                line = bytes(self._pending + data[pos:end]).rstrip(b"\r")
                self._pending.clear()
                pos = end + 1
                try:
                    length = int(line.split(b";")[0], 16)
                except ValueError:
                    raise S3Error(400, f"malformed aws-chunked body: {line[:40]!r}") from None
                if length < 0:
                    raise S3Error(400, f"malformed aws-chunked body: {line[:40]!r}")
                self._done = length == 0  # trailers, if any, are ignored
                self._data_left = length
        return bytes(out)
