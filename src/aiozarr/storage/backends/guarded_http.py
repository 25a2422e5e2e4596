"""`GuardedHTTPStore`: plain HTTP(S) reads that follow no redirect unchecked.

obstore's HTTP client follows up to ten redirects to any host, sending the client's
default headers along (it drops only `Authorization` on a host change), and has no
setting to stop it. Where the locations a store may reach are limited (the targets of a
reference file: `storage/references/targets.py`), the store is this one instead: aiohttp
with redirects off. Each redirect's `Location` goes to `check_redirect(from, to)`, which
raises to refuse it before any request to it is made and returns the URL to read; a hop
to another scheme, host or port carries none of the store's headers, and its certificate
is checked as by default (`allow_invalid_certificates` and `root_certificate` stay home).

Bodies are asked for as stored (`Accept-Encoding: identity`); an answer encoded anyway
(`Content-Encoding: gzip` ...) is refused, final. One GET per read (`Range` for a byte
range, `bytes=-N` for a suffix), a HEAD for a size; the version of an answer is its
ETag, where that is a strong validator (`strong_etag`), with the value's size beside
(`stored_size`) where the answer tells it: a whole value's length, a `206`'s
`Content-Range` total (none for `bytes a-b/*`), a `200` to a range's Content-Length
(none when chunked). Bodies are read as sent (no decompression) and as they come, no
further than needed: a whole value up to its bound
(refused from its `Content-Length` unread), a `206` up to the length of the range asked
for (its `Content-Range` must be that range, or that range clipped at the value's end), a
`200` to a range up to the range's end. Anything longer is refused, its rest unread. Each
request has the connection pool of its batch (`stream_versioned_values`), closed when
the batch ends: no pool outlives a batch, so a store serves any event loop and leaves
nothing to close.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import datetime
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from email.utils import formatdate, parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin, urlsplit

from aiozarr.byte_range import ByteRange
from aiozarr.errors import SourceChangedError, StoreError
from aiozarr.sizes import memory_bytes
from aiozarr.storage.backends.cloud_hosts import cannot_list
from aiozarr.storage.backends.object_ranges import RECENT_S, is_weak
from aiozarr.storage.backends.redaction import redact_url
from aiozarr.storage.policy.backend import ObjectVersion, UnprovenVersion
from aiozarr.storage.policy.retry import (
    RETRY_STATUS,
    ShortReadError,
    TransientStoreError,
    answer_began,
)
from aiozarr.storage.protocol import (
    Capabilities,
    RangeRequest,
    Store,
    Versioned,
    check_key,
    check_size,
)

if TYPE_CHECKING:
    import aiohttp

# aiohttp (~0.2 s to import, TLS roots included) is imported where a request is first
# made: most sessions never read a reference target over plain HTTP.

__all__ = ["CLIENT_OPTIONS", "GuardedHTTPStore", "strong_etag"]

#: The client options taken: headers, TLS and a proxy. The timeouts and connection
#: tuning are accepted and not used (the request policy's timeout bounds each request).
CLIENT_OPTIONS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "default_headers",
        "proxy_url",
        "root_certificate",
        "user_agent",
        "connect_timeout",
        "read_timeout",
        "timeout",
        "http1_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
    }
)
_MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
# Characters a key keeps as they are in the URL (what it holds already encoded stays so).
_SAFE = "/%!$&'()*+,;=:@~-._"

#: `(from URL, Location)` -> the URL to read next; raises to refuse the redirect.
RedirectCheck = Callable[[str, str], str]


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class GuardedHTTPStore(Store):
    """A read-only, unlistable `Store` over `http(s)://` `url` whose redirects pass
    `check_redirect` first. `client_options`: obstore's names (`CLIENT_OPTIONS`)."""

    # An answer's version tells the value's size where the server does: one that tells
    # none makes a span of an uncompressed chunk be read again whole (`engine/located.py`).
    CAPABILITIES = Capabilities(
        writes=False, deletes=False, listing=False, hedge_reads=True, sized_versions=True
    )

    def __init__(
        self,
        url: str,
        *,
        check_redirect: RedirectCheck,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(read_only=True)
        self._url = url.rstrip("/")
        self._check = check_redirect
        options = dict(client_options or {})
        unknown = sorted(set(options) - CLIENT_OPTIONS)
        if unknown:
            raise StoreError(
                f"cannot open {redact_url(url)!r}: an http(s) reference location takes the "
                f"client options {sorted(CLIENT_OPTIONS)}, got {unknown}"
            )
        headers = {
            str(k): v.decode("latin-1") if isinstance(v, bytes) else str(v)
            for k, v in (options.get("default_headers") or {}).items()
        }
        if options.get("user_agent"):
            headers["User-Agent"] = str(options["user_agent"])
        self._headers = headers
        self._proxy = options.get("proxy_url")
        self._tls = {k: options.get(k) for k in ("allow_invalid_certificates", "root_certificate")}
        self._ssl: ssl.SSLContext | bool | None = None  # made on first use; not pickled
        self._condition: dict[str, str] = {}  # every GET's (`conditioned`)

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "_ssl": None}

    def with_read_only(self, read_only: bool = True) -> GuardedHTTPStore:
        """The same store with another flag (it writes nothing either way), sharing this
        one's request budget."""
        other = copy.copy(self)
        other._read_only = read_only
        other._runtime = self.runtime
        return other

    def conditioned(
        self, *, etag: str | None = None, modified_by: int | None = None
    ) -> GuardedHTTPStore:
        """This store reading only the version with ETag `etag` (`If-Match`), or one
        last modified at or before `modified_by`, seconds since the epoch
        (`If-Unmodified-Since`): a server that honours them answers 412 for another,
        raised as `SourceChangedError`. A weak ETag is not sent (`If-Match` compares
        strongly): the reader compares it with the answer's. The copy shares this one's
        request budget; a store per condition keeps each chunk under its own."""
        condition: dict[str, str] = {}
        if etag is not None and not etag.strip().startswith(("W/", "w/")):
            tag = etag.strip()
            condition["If-Match"] = tag if tag.startswith('"') else f'"{tag}"'
        if modified_by is not None:
            condition["If-Unmodified-Since"] = formatdate(modified_by, usegmt=True)
        other = copy.copy(self)
        other._condition = condition
        other._runtime = self.runtime
        return other

    # -- requests ----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _send(
        self, method: str, key: str, headers: Mapping[str, str]
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """The answer to `method` on `key`, through the redirects `check_redirect` lets
        pass; a transport failure is a `TransientStoreError`, a body that breaks off a
        `ShortReadError` (both retried)."""
        url = f"{self._url}/{quote(key, safe=_SAFE)}"
        home = _origin(self._url)
        from aiohttp import ClientError
        from yarl import URL

        if self._ssl is None:
            self._ssl = _ssl_setting(self._tls)
        async with _session() as session:
            for _ in range(_MAX_REDIRECTS + 1):
                # Off the store's own origin: none of its headers, default TLS checks.
                at_home = _origin(url) == home
                own = self._headers if at_home else {}
                sent = {**own, "Accept-Encoding": "identity", **headers}
                try:
                    response = await session.request(
                        method,
                        URL(url, encoded=True),
                        headers=sent,
                        allow_redirects=False,
                        proxy=self._proxy,
                        ssl=self._ssl if at_home else True,
                    )
                except ClientError as error:
                    raise TransientStoreError(
                        f"cannot read {key!r} in {self!r}: {type(error).__name__}: {error}"
                    ) from error
                location = response.headers.get("Location")
                if response.status in _REDIRECTS and location:
                    response.release()
                    url = self._check(url, urljoin(url, location))
                    continue
                try:
                    yield response
                except ClientError as error:  # the body broke off: cut short, reset
                    raise ShortReadError(
                        f"cannot read {key!r} in {self!r}: the answer's body broke off "
                        f"({type(error).__name__}: {error})"
                    ) from error
                finally:
                    response.release()
                return
        raise StoreError(f"cannot read {key!r} in {self!r}: more than {_MAX_REDIRECTS} redirects")

    @contextlib.asynccontextmanager
    async def stream_versioned_values(self, requests: Sequence[RangeRequest]) -> AsyncIterator[Any]:
        """The base class's batch read, its requests sharing one connection pool."""
        async with _batch_session(), super().stream_versioned_values(requests) as answers:
            yield answers

    def _failed(self, key: str, response: aiohttp.ClientResponse) -> StoreError:
        said = f"cannot read {key!r} in {self!r}: HTTP {response.status} {response.reason}"
        if response.status not in RETRY_STATUS:
            return StoreError(said)
        wait = _retry_after_s(response.headers.get("Retry-After"))
        return TransientStoreError(said, retry_after_s=wait)

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """One GET; a whole value over `max_bytes` is refused from its headers, unread."""
        check_key(key)
        if byte_range is not None and (byte_range.length == 0 or byte_range.suffix == 0):
            size = await self._head(key)  # HTTP cannot ask for 0 bytes
            return None if size is None else (memoryview(b""), size[1])
        headers = {} if byte_range is None else {"Range": _range_header(byte_range)}
        condition = self._condition
        async with self._send("GET", key, {**headers, **condition}) as response:
            answer_began()
            if response.status in (404, 410):
                return None
            if response.status == 412 and condition:
                said = ", ".join(f"{name}: {value}" for name, value in condition.items())
                raise SourceChangedError(
                    f"cannot read {key!r} in {self!r}: it is no longer the version "
                    f"referenced ({said}: the server answered 412 Precondition Failed)"
                )
            if response.status == 416:  # the range starts past the end: nothing there
                return memoryview(b""), None
            if response.status not in (200, 206):
                raise self._failed(key, response)
            _check_encoding(key, response, self)
            headers = response.headers
            bound = memory_bytes() if max_bytes is None else max_bytes
            if byte_range is None:
                data = await _body(key, response, bound, self)
                return memoryview(data), self._version(headers, len(data))
            if response.status == 200:  # the server ignored Range: cut the range out
                data = await _range_of_whole(key, response, byte_range, bound, self)
                return memoryview(data), self._version(headers, response.content_length)
            start, last, size = _check_partial(key, byte_range, headers.get("Content-Range", ""))
            data = await _body(key, response, last + 1 - start, self, exact=True)
            return memoryview(data), self._version(headers, size)

    def _version(self, headers: Mapping[str, str], size: int | None) -> Any:
        """The answer's version, telling the value's `size` (None: the answer does not
        tell it; `stored_size`). Its ETag where that is a strong validator
        (`strong_etag`), else an `UnprovenVersion` with none; a store reading on a
        condition keeps the ETag as sent with the answer's Last-Modified beside (a
        checksum compares both, a server may ignore the condition), one with no ETag an
        `UnprovenVersion` (no later read relies on either)."""
        if not self._condition:
            e_tag = strong_etag(headers)
            kind = UnprovenVersion if e_tag is None else ObjectVersion
            return kind(e_tag, None, None, size)
        e_tag = headers.get("ETag")
        seconds = _seconds(headers.get("Last-Modified"))
        modified = None
        if seconds is not None:
            modified = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
        if e_tag is None:
            return UnprovenVersion(None, None, modified, size)
        return ObjectVersion(e_tag, None, modified, size)

    async def _head(self, key: str) -> tuple[int, Any] | None:
        async with self._send("HEAD", key, {}) as response:
            if response.status in (404, 410):
                return None
            if response.status != 200:
                raise self._failed(key, response)
            if response.content_length is None:
                raise StoreError(f"cannot stat {key!r} in {self!r}: no Content-Length")
            size = response.content_length
            return size, self._version(response.headers, size)

    async def getsize(self, key: str) -> int | None:
        """Size in bytes of `key` from a HEAD request; None if missing."""
        check_key(key)
        found = await self._request("stat", key, lambda: self._head(key))
        return None if found is None else found[0]

    async def exists(self, key: str) -> bool:
        return await self.getsize(key) is not None

    # -- no listing --------------------------------------------------------------------

    def _cannot_list(self) -> StoreError:
        return cannot_list(self._url, repr(self))

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        raise self._cannot_list()
        yield ""  # pragma: no cover (an async generator)

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        raise self._cannot_list()
        yield ""  # pragma: no cover (an async generator)

    def __repr__(self) -> str:
        return f"GuardedHTTPStore({redact_url(self._url)!r})"


# The connection pool of the batch under way in this task (and the tasks it starts).
_BATCH: contextvars.ContextVar[aiohttp.ClientSession | None] = contextvars.ContextVar(
    "aiozarr_guarded_http_batch", default=None
)


def _new_session() -> aiohttp.ClientSession:
    """Headers, TLS settings and the proxy go with each request, and cookies nowhere: a
    session serves any store."""
    import aiohttp

    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),  # the request budget bounds requests
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
    )


@contextlib.asynccontextmanager
async def _batch_session() -> AsyncIterator[None]:
    """One pool for the requests of a batch, closed when the batch ends."""
    if _BATCH.get() is not None:
        yield
        return
    async with _new_session() as session:
        token = _BATCH.set(session)
        try:
            yield
        finally:
            _BATCH.reset(token)


@contextlib.asynccontextmanager
async def _session() -> AsyncIterator[aiohttp.ClientSession]:
    """The batch's pool, or one for this request alone (a HEAD, a read outside a batch)."""
    session = _BATCH.get()
    if session is not None and not session.closed:
        yield session
        return
    async with _new_session() as session:
        yield session


def strong_etag(headers: Mapping[str, str]) -> str | None:
    """An answer's ETag if it tells versions apart (RFC 9110 §8.8.1-8.8.3), else None.

    A `W/` ETag is weak. A strong-looking one sent beside a Last-Modified less than a
    second before the answer's Date may not change on a rewrite within that second
    (nginx's is "<mtime seconds>-<size>"): not one either, with a margin (2 s). Without a
    Date, the Last-Modified is compared with this machine's clock, `RECENT_S` either way.
    Without a Last-Modified nothing tells whether the ETag is strong: None.
    """
    e_tag = headers.get("ETag")
    modified = _seconds(headers.get("Last-Modified"))
    if e_tag is None or is_weak(e_tag) or modified is None:
        return None
    date = _seconds(headers.get("Date"))
    if date is not None:
        return None if date - modified < 2 else e_tag
    return None if abs(time.time() - modified) < RECENT_S else e_tag


def _retry_after_s(value: str | None) -> float | None:
    """A `Retry-After` (seconds, or an HTTP date) as seconds from now; None if absent or
    unreadable."""
    if value is None:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    when = _seconds(value)
    return None if when is None else max(when - time.time(), 0.0)


def _seconds(http_date: str | None) -> float | None:
    """An HTTP date in seconds since the epoch; None when absent or unreadable."""
    if not http_date:
        return None
    try:
        return parsedate_to_datetime(http_date).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _check_encoding(key: str, response: aiohttp.ClientResponse, where: object) -> None:
    """Refuse (final) a body sent encoded (gzip ...) though asked for as stored
    (`Accept-Encoding: identity`): its bytes are not the value's."""
    encoding = response.headers.get("Content-Encoding", "identity").strip()
    if encoding.lower() != "identity":
        raise StoreError(
            f"cannot read {key!r} in {where!r}: the server answered with Content-Encoding: "
            f"{encoding}, although asked for the stored bytes (Accept-Encoding: identity); "
            "aiozarr does not decode transfer encodings: serve the value unencoded"
        )


def _range_header(byte_range: ByteRange) -> str:
    if byte_range.suffix is not None:
        return f"bytes=-{byte_range.suffix}"
    if byte_range.length is None:
        return f"bytes={byte_range.offset}-"
    return f"bytes={byte_range.offset}-{byte_range.offset + byte_range.length - 1}"


def _announced(key: str, response: aiohttp.ClientResponse, bound: int, where: object) -> int | None:
    """The body length the headers announce, refused when over `bound`."""
    announced = response.content_length
    if announced is not None:
        check_size(key, announced, bound, where)
    return announced


async def _body(
    key: str, response: aiohttp.ClientResponse, bound: int, where: object, *, exact: bool = False
) -> bytes:
    """The body, read as it comes and refused as soon as more than `bound` bytes (or
    than its `Content-Length`) have come; `exact`: `bound` is the length asked for."""
    if exact and response.content_length not in (None, bound):
        raise StoreError(
            f"cannot read {key!r}: {response.content_length} bytes announced for a range of {bound}"
        )
    announced = _announced(key, response, bound, where)
    limit = bound if announced is None else announced
    parts: list[bytes] = []
    got = 0
    async for part in response.content.iter_any():
        got += len(part)
        if got > limit:
            response.close()  # the rest is not read
            if announced is None and not exact:
                check_size(key, got, bound, where)
            said = "asked for" if announced is None else "announced"
            raise StoreError(f"cannot read {key!r}: more than the {limit} bytes {said} came")
        parts.append(part)
    expected = bound if exact else announced
    if expected is not None and got < expected:
        raise ShortReadError(f"cannot read {key!r}: {got} of {expected} bytes came")
    return b"".join(parts)


async def _range_of_whole(
    key: str, response: aiohttp.ClientResponse, byte_range: ByteRange, bound: int, where: object
) -> bytes:
    """`byte_range` of a whole value sent for it (at most `bound` bytes), read no further
    than the range's end."""
    if byte_range.end is None:  # to the end, or a suffix: the value whole
        data = await _body(key, response, bound, where)
        start, stop = byte_range.resolve(len(data))
        return data[start:stop]
    announced = _announced(key, response, bound, where)
    stop = byte_range.end
    parts: list[bytes] = []
    got = 0
    async for part in response.content.iter_any():
        parts.append(part[max(byte_range.offset - got, 0) : max(stop - got, 0)])
        got += len(part)
        if got >= stop:
            response.close()  # the rest is not needed
            return b"".join(parts)
        check_size(key, got, bound, where)
    if announced is not None and got < announced:
        raise ShortReadError(f"cannot read {key!r}: {got} of {announced} bytes came")
    return b"".join(parts)


def _check_partial(
    key: str, byte_range: ByteRange, content_range: str
) -> tuple[int, int, int | None]:
    """`(start, last, size)` of a 206 answer (`size` None: `bytes a-b/*`), refused unless
    it is the range asked for, or that range clipped at the value's end."""
    found = _CONTENT_RANGE.fullmatch(content_range.strip())
    if found is None:
        raise StoreError(f"cannot read {key!r}: a partial answer without a valid Content-Range")
    start, last = int(found[1]), int(found[2])
    size = None if found[3] == "*" else int(found[3])
    length = last + 1 - start
    if size is not None:
        want_start, want_stop = byte_range.resolve(size)
        good = start == want_start and last + 1 == want_stop
    elif byte_range.suffix is not None:  # unknown size: all N bytes, or the value from 0
        good = length == byte_range.suffix or (length < byte_range.suffix and start == 0)
    else:  # unknown size: only the whole range asked for shows no cut
        good = start == byte_range.offset and (byte_range.end is None or last + 1 == byte_range.end)
    if not good or length <= 0:
        raise StoreError(
            f"cannot read {key!r}: asked for {byte_range}, answered {content_range.strip()!r}"
        )
    return start, last, size


def _ssl_setting(options: Mapping[str, Any]) -> ssl.SSLContext | bool:
    if options.get("allow_invalid_certificates"):
        return False
    root = options.get("root_certificate")
    if not root:
        return True
    context = ssl.create_default_context()
    context.load_verify_locations(cadata=root.decode() if isinstance(root, bytes) else root)
    return context
