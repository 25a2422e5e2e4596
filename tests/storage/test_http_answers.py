"""Plain HTTP servers' answers that are not the stored bytes, as obstore's `HTTPStore`
(what `from_url("http://...")` opens) and `GuardedHTTPStore` (reference targets) see them:

- bodies are asked for as stored (`Accept-Encoding: identity`); one encoded anyway
  (`Content-Encoding: gzip`) is refused, final, naming the key;
- what obstore refuses whatever the try (no Content-Length, a 206 of another range, an
  unreadable Content-Range, a redirect loop) is one final error that says what it
  means, not ten retries; a body cut short is still retried.
"""

from __future__ import annotations

import asyncio
import gzip
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest
from tests.storage.http_server import FolderServer

import aiozarr
from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage.backends.guarded_http import GuardedHTTPStore
from aiozarr.storage.opening.url import from_url

VALUE = bytes(range(256)) * 40


@pytest.fixture
def server(tmp_path: Path) -> FolderServer:
    (tmp_path / "x").write_bytes(VALUE)
    with FolderServer(tmp_path) as serving:
        yield serving


def _no_redirect(source: str, location: str) -> NoReturn:
    raise AssertionError(f"{source} redirected to {location}")


def _gzip_unless_identity(always: bool):  # type: ignore[no-untyped-def]
    """An answer gzipped as servers that compress by default do: unless the request
    asks for `identity` (or `always`)."""

    def answer(handler: BaseHTTPRequestHandler, path: str) -> bool:
        asked = handler.headers.get("Accept-Encoding", "")
        if "identity" in asked and not always:
            return False
        body = gzip.compress((handler.server.owner.root / path.lstrip("/")).read_bytes())
        handler.send(200, body, {"Content-Encoding": "gzip"})
        return True

    return answer


def test_an_http_array_is_read_as_stored_from_a_server_that_gzips_by_default(
    tmp_path: Path, server: FolderServer
) -> None:
    values = np.arange(100, dtype="f8")
    aiozarr.create_array(str(tmp_path / "a.zarr"), shape=(100,), dtype="f8", chunks=(10,))[:] = (
        values
    )
    server.answer = _gzip_unless_identity(always=False)
    np.testing.assert_array_equal(aiozarr.open_array(f"{server.url}/a.zarr")[:], values)
    sent = {
        value
        for _, _, headers in server.requests
        for name, value in headers.items()
        if name.lower() == "accept-encoding"
    }
    assert sent == {"identity"}


# A range answered whole (200) is read again whole by obstore's store, once.
@pytest.mark.parametrize(("byte_range", "gets"), [(None, 2), (ByteRange.of(0, 10), 3)])
def test_an_encoded_answer_is_refused_naming_the_key(
    server: FolderServer, byte_range: ByteRange | None, gets: int
) -> None:
    server.answer = _gzip_unless_identity(always=True)
    stores = [from_url(server.url), GuardedHTTPStore(server.url, check_redirect=_no_redirect)]
    for store in stores:
        with pytest.raises(StoreError, match=r"'x'.*Content-Encoding: gzip"):
            asyncio.run(store.get("x", byte_range))
    assert server.gets("/x") == gets  # final: not retried


def _chunked(handler: BaseHTTPRequestHandler, path: str) -> bool:
    handler.send(200, b"5\r\nhello\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"})
    return True


def _other_range(handler: BaseHTTPRequestHandler, path: str) -> bool:
    handler.send(206, VALUE[:512], {"Content-Range": f"bytes 0-511/{len(VALUE)}"})
    return True


def _bad_content_range(handler: BaseHTTPRequestHandler, path: str) -> bool:
    handler.send(206, VALUE[:10], {"Content-Range": "bytes zz"})
    return True


@pytest.mark.parametrize(
    ("answer", "byte_range", "said"),
    [
        (_chunked, None, "without a Content-Length"),
        (_other_range, ByteRange.of(0, 100), "does not serve the ranges asked for"),
        (_bad_content_range, ByteRange.of(0, 10), "Content-Range that is not"),
    ],
)
def test_an_answer_obstore_refuses_is_one_final_explained_error(
    server: FolderServer, answer, byte_range: ByteRange | None, said: str
) -> None:
    server.answer = answer
    with pytest.raises(StoreError, match=said):
        asyncio.run(from_url(server.url).get("x", byte_range))
    assert server.gets("/x") == 1


def test_a_redirect_loop_is_one_final_explained_error(server: FolderServer) -> None:
    def loop(handler: BaseHTTPRequestHandler, path: str) -> bool:
        handler.send(302, b"", {"Location": path})
        return True

    server.answer = loop
    with pytest.raises(StoreError, match="redirects go round"):
        asyncio.run(from_url(server.url).get("x"))
    assert server.gets("/x") <= 11  # obstore's own hops, one try


def test_a_body_cut_short_is_still_retried(server: FolderServer) -> None:
    def cut_once(handler: BaseHTTPRequestHandler, path: str) -> bool:
        if server.gets(path) > 1:
            return False
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(VALUE)))
        handler.end_headers()
        handler.wfile.write(VALUE[:100])
        handler.close_connection = True
        return True

    server.answer = cut_once
    assert bytes(asyncio.run(from_url(server.url).get("x"))) == VALUE
    assert server.gets("/x") == 2


@pytest.mark.parametrize("chunked", [False, True])
def test_a_guarded_http_body_that_breaks_off_is_retried(
    server: FolderServer, chunked: bool
) -> None:
    def cut_once(handler: BaseHTTPRequestHandler, path: str) -> bool:
        if server.gets(path) > 1:
            return False
        handler.send_response(200)
        if chunked:  # a chunk announced, half sent, then the connection closed
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            handler.wfile.write(b"%x\r\n" % len(VALUE) + VALUE[:100])
        else:  # fewer bytes than the Content-Length, then the connection closed
            handler.send_header("Content-Length", str(len(VALUE)))
            handler.end_headers()
            handler.wfile.write(VALUE[:100])
        handler.close_connection = True
        return True

    server.answer = cut_once
    store = GuardedHTTPStore(server.url, check_redirect=_no_redirect)
    assert bytes(asyncio.run(store.get("x"))) == VALUE
    assert server.gets("/x") == 2


def _busy_for(server: FolderServer, wait: str, seconds: float):  # type: ignore[no-untyped-def]
    """503 with `Retry-After: wait` to every request until `seconds` after the first."""
    first: list[float] = []

    def answer(handler: BaseHTTPRequestHandler, path: str) -> bool:
        now = time.monotonic()
        first.append(now)
        if now - first[0] >= seconds:
            return False
        handler.send(503, b"", {"Retry-After": wait})
        return True

    return answer


def test_a_retry_after_is_waited_for(server: FolderServer) -> None:
    server.answer = _busy_for(server, "1", 1.0)
    store = GuardedHTTPStore(server.url, check_redirect=_no_redirect)
    # Without the wait asked for, the second (and last) try comes within 0.01 s.
    with config.set(retry_attempts=2, retry_base_delay_s=0.01, retry_max_delay_s=0.01):
        assert bytes(asyncio.run(store.get("x"))) == VALUE
    assert server.gets("/x") == 2


def test_a_retry_after_past_the_deadline_gives_up_at_once(server: FolderServer) -> None:
    server.answer = _busy_for(server, "3600", 3600.0)
    store = GuardedHTTPStore(server.url, check_redirect=_no_redirect)
    with config.set(retry_deadline_s=30.0), pytest.raises(StoreError, match="503"):
        asyncio.run(store.get("x"))
    assert server.gets("/x") == 1


def test_a_404_that_names_a_missing_bucket_is_a_missing_key_over_plain_http(
    emulator: Emulator,
) -> None:
    """The emulator over plain HTTP answers a path under no bucket with S3's NoSuchBucket:
    to a plain HTTP store that is a missing key (there are no buckets), not an error
    about its (absent) bucket settings (it was an AttributeError: no `config`)."""
    no_bucket = f"{emulator.endpoint}/no-bucket"
    assert asyncio.run(from_url(no_bucket).get("a.zarr/zarr.json")) is None
    with pytest.raises(aiozarr.errors.NodeNotFoundError, match="no Zarr array or group"):
        aiozarr.open_array(f"{no_bucket}/a.zarr", mode="r")
