"""The object-store emulator, spoken to with a plain HTTP client (and obstore for uploads)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from xml.etree import ElementTree

import aiohttp
import obstore
import pytest
import yarl
from multidict import CIMultiDict
from obstore.store import S3Store

from aiozarr.emulator import Emulator
from aiozarr.emulator.paths import TMP_DIR

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
DATA = bytes(range(100))


@pytest.fixture
async def emu(tmp_path: Path) -> AsyncIterator[Emulator]:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "data").write_bytes(DATA)
    async with Emulator(tmp_path) as emu:
        yield emu


async def fetch(
    http: aiohttp.ClientSession, method: str, url: str, **kwargs: object
) -> tuple[int, CIMultiDict[str], bytes]:
    async with http.request(method, url, **kwargs) as resp:  # type: ignore[arg-type]
        return resp.status, CIMultiDict(resp.headers), await resp.read()


def error_code(body: bytes) -> str:
    return ElementTree.fromstring(body).findtext("Code") or ""


# -- reads -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "status", "expected", "content_range"),
    [
        (None, 200, DATA, None),
        ("bytes=10-19", 206, DATA[10:20], "bytes 10-19/100"),
        ("bytes=90-", 206, DATA[90:], "bytes 90-99/100"),
        ("bytes=-5", 206, DATA[-5:], "bytes 95-99/100"),
        ("bytes=-500", 206, DATA, "bytes 0-99/100"),
        ("bytes=95-200", 206, DATA[95:], "bytes 95-99/100"),
        ("bytes=0-1,5-6", 200, DATA, None),  # like S3: several ranges get the whole object
        # not one valid byte range (RFC 9110: ignored): what int() would have taken
        ("bytes=1_0-", 200, DATA, None),
        ("bytes=0-1_0", 200, DATA, None),
        ("bytes=+2-4", 200, DATA, None),
        ("bytes=\u0662-4", 200, DATA, None),
        ("bytes=5-2", 200, DATA, None),  # a last position before the first
        ("bytes=2--4", 200, DATA, None),
    ],
)
async def test_get_ranges(
    emu: Emulator,
    http: aiohttp.ClientSession,
    header: str | None,
    status: int,
    expected: bytes,
    content_range: str | None,
) -> None:
    headers = {"Range": header} if header else {}
    got_status, got_headers, body = await fetch(
        http, "GET", emu.http_url("a/data"), headers=headers
    )
    assert (got_status, body) == (status, expected)
    assert got_headers.get("Content-Range") == content_range
    assert got_headers["Content-Length"] == str(len(expected))


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=150-160", "bytes=-0"])
async def test_unsatisfiable_range_is_416(
    emu: Emulator, http: aiohttp.ClientSession, header: str
) -> None:
    status, _, body = await fetch(http, "GET", emu.http_url("a/data"), headers={"Range": header})
    assert status == 416
    assert error_code(body) == "InvalidRange"


async def test_missing_key_and_bucket(emu: Emulator, http: aiohttp.ClientSession) -> None:
    status, headers, body = await fetch(http, "GET", emu.http_url("a/nope"))
    assert status == 404
    assert headers["Content-Type"].startswith("application/xml")
    root = ElementTree.fromstring(body)
    assert (root.findtext("Code"), root.findtext("Key")) == ("NoSuchKey", "a/nope")
    status, _, body = await fetch(http, "GET", f"{emu.endpoint}/otherbucket/a/data")
    assert (status, error_code(body)) == (404, "NoSuchBucket")
    status, _, body = await fetch(http, "HEAD", emu.http_url("a/nope"))
    assert (status, body) == (404, b"")
    status, _, _ = await fetch(http, "GET", emu.http_url("a"))  # a directory is no object
    assert status == 404


async def test_head(emu: Emulator, http: aiohttp.ClientSession) -> None:
    status, headers, body = await fetch(http, "HEAD", emu.http_url("a/data"))
    assert status == 200 and body == b""
    assert headers["Content-Length"] == "100"
    assert headers["ETag"].startswith('"')
    assert headers["Last-Modified"].endswith("GMT")


async def test_key_cannot_escape_root(emu: Emulator, http: aiohttp.ClientSession) -> None:
    secret = emu.root.parent / f"{emu.root.name}-secret"
    secret.write_bytes(b"TOP-SECRET-CONTENT")
    raw = f"{emu.http_url()}/a/%2E%2E/%2E%2E/{secret.name}"
    async with http.get(yarl.URL(raw, encoded=True)) as resp:
        assert resp.status == 400
        assert error_code(await resp.read()) == "InvalidArgument"


# -- writes ------------------------------------------------------------------------------


async def test_put_get_delete(emu: Emulator, http: aiohttp.ClientSession) -> None:
    status, headers, _ = await fetch(
        http,
        "PUT",
        emu.http_url("x/y/z"),
        data=b"hello",
        headers={"Authorization": "AWS4-HMAC-SHA256 ignored"},
    )
    assert status == 200 and "ETag" in headers
    assert (emu.root / "x" / "y" / "z").read_bytes() == b"hello"
    assert (await fetch(http, "GET", emu.http_url("x/y/z")))[2] == b"hello"
    assert (await fetch(http, "DELETE", emu.http_url("x/y/z")))[0] == 204
    assert not (emu.root / "x" / "y" / "z").exists()
    assert (await fetch(http, "DELETE", emu.http_url("x/y/z")))[0] == 204  # missing: fine


@pytest.mark.parametrize(("first", "second"), [("k/foo", "k/foo/bar"), ("k/foo/bar", "k/foo")])
async def test_a_key_that_is_also_a_prefix_is_refused_not_failed(
    emu: Emulator, http: aiohttp.ClientSession, first: str, second: str
) -> None:
    """Objects are files here, so `a` and `a/b` cannot both be: a 400 that says so (a 500
    would be retried), the first object intact and no temp file left."""
    assert (await fetch(http, "PUT", emu.http_url(first), data=b"one"))[0] == 200
    status, _, body = await fetch(http, "PUT", emu.http_url(second), data=b"two")
    assert status == 400 and error_code(body) == "InvalidArgument"
    assert b"both an object and a prefix" in body
    assert (await fetch(http, "GET", emu.http_url(first)))[2] == b"one"
    assert not list((emu.root / TMP_DIR).glob("*"))


async def test_put_aws_chunked_payload(emu: Emulator, http: aiohttp.ClientSession) -> None:
    body = (
        b"5;chunk-signature=abc\r\nhello\r\n3;chunk-signature=def\r\n!!!\r\n"
        b"0;chunk-signature=0\r\n\r\n"
    )
    headers = {"x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}
    assert (await fetch(http, "PUT", emu.http_url("chunked"), data=body, headers=headers))[0] == 200
    assert (emu.root / "chunked").read_bytes() == b"hello!!!"


async def test_put_aws_chunked_payload_streamed_in_odd_pieces(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    """A large framed body goes to a temp file as it comes: frames cut across pieces."""
    payload = bytes(range(256)) * (3 * 4096 + 7)  # ~3 MiB: past the in-memory limit
    framed = (
        b"".join(
            b"%x;chunk-signature=s\r\n" % len(payload[i : i + 65_536])
            + payload[i : i + 65_536]
            + b"\r\n"
            for i in range(0, len(payload), 65_536)
        )
        + b"0;chunk-signature=s\r\n\r\n"
    )

    async def pieces() -> AsyncIterator[bytes]:
        for i in range(0, len(framed), 40_009):
            yield framed[i : i + 40_009]

    headers = {"x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}
    status, _, _ = await fetch(http, "PUT", emu.http_url("framed"), data=pieces(), headers=headers)
    assert status == 200
    assert (emu.root / "framed").read_bytes() == payload
    assert emu.stats()["bytes_written"] == len(framed)


async def test_delete_objects(emu: Emulator, http: aiohttp.ClientSession) -> None:
    for name in ("k1", "k2"):
        (emu.root / name).write_bytes(b"x")
    xml = (
        '<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>k1</Key>'
        "</Object><Object><Key>k2</Key></Object><Object><Key>missing</Key></Object></Delete>"
    )
    status, _, body = await fetch(http, "POST", f"{emu.endpoint}/{emu.bucket}?delete", data=xml)
    assert status == 200
    deleted = [e.text for e in ElementTree.fromstring(body).iter(f"{NS}Key")]
    assert deleted == ["k1", "k2", "missing"]
    assert not (emu.root / "k1").exists() and not (emu.root / "k2").exists()
    assert emu.stats()["by_kind"] == {"delete_objects": 1}


async def test_delete_objects_answers_a_refused_key_on_its_own(
    emu: Emulator, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key the file system refuses to delete (a read-only mount) is that key's
    <Error>, as S3 answers per key: it failed the whole request, with the keys before
    it deleted and those after it not tried."""
    for name in ("k1", "k2", "k3"):
        (emu.root / name).write_bytes(b"x")
    unlink = os.unlink

    def refusing(path: str | Path, **dir_fd: int | None) -> None:
        if Path(path).name == "k2":
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        unlink(path, **dir_fd)

    monkeypatch.setattr(os, "unlink", refusing)
    keys = "".join(f"<Object><Key>{k}</Key></Object>" for k in ("k1", "k2", "k3"))
    xml = f'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{keys}</Delete>'
    status, _, body = await fetch(http, "POST", f"{emu.endpoint}/{emu.bucket}?delete", data=xml)
    assert status == 200
    answer = ElementTree.fromstring(body)
    assert [e.findtext(f"{NS}Key") for e in answer.iter(f"{NS}Deleted")] == ["k1", "k3"]
    assert [e.findtext(f"{NS}Key") for e in answer.iter(f"{NS}Error")] == ["k2"]
    assert sorted(p.name for p in emu.root.iterdir() if p.name.startswith("k")) == ["k2"]


async def test_read_only_refuses_writes(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    async with Emulator(tmp_path, read_only=True) as emu:
        status, _, body = await fetch(http, "PUT", emu.http_url("k"), data=b"x")
        assert (status, error_code(body)) == (403, "AccessDenied")
        assert not (tmp_path / "k").exists()


async def test_multipart_upload_through_obstore(emu: Emulator) -> None:
    store = S3Store(emu.bucket, **emu.storage_options())
    payload = bytes(range(256)) * (24 * 1024)  # 6 MiB: over obstore's 5 MiB part size
    await obstore.put_async(store, "big/blob", payload)
    assert (emu.root / "big" / "blob").read_bytes() == payload
    kinds = emu.stats()["by_kind"]
    assert kinds == {"create_multipart": 1, "upload_part": 2, "complete_multipart": 1}
    assert emu.stats()["bytes_written"] >= len(payload)
    assert not any(p.name != "blob" for p in (emu.root / "big").iterdir())


# -- listing -----------------------------------------------------------------------------


async def list_v2(
    http: aiohttp.ClientSession, emu: Emulator, **params: str
) -> tuple[list[str], list[str], str | None]:
    query = {"list-type": "2", **params}
    status, _, body = await fetch(http, "GET", f"{emu.endpoint}/{emu.bucket}", params=query)
    assert status == 200
    root = ElementTree.fromstring(body)
    keys = [e.findtext(f"{NS}Key") or "" for e in root.iter(f"{NS}Contents")]
    prefixes = [e.findtext(f"{NS}Prefix") or "" for e in root.iter(f"{NS}CommonPrefixes")]
    return keys, prefixes, root.findtext(f"{NS}NextContinuationToken")


async def test_list_prefix_and_delimiter(emu: Emulator, http: aiohttp.ClientSession) -> None:
    for key in ("z/c/0", "z/c/1", "z/zarr.json", "z/d/0", "zz"):
        (emu.root / key).parent.mkdir(parents=True, exist_ok=True)
        (emu.root / key).write_bytes(b"1")
    keys, prefixes, token = await list_v2(http, emu, prefix="z/")
    assert keys == ["z/c/0", "z/c/1", "z/d/0", "z/zarr.json"] and not prefixes and token is None
    keys, prefixes, _ = await list_v2(http, emu, prefix="z/", delimiter="/")
    assert keys == ["z/zarr.json"] and prefixes == ["z/c/", "z/d/"]
    keys, _, _ = await list_v2(http, emu, prefix="z")
    assert keys == ["z/c/0", "z/c/1", "z/d/0", "z/zarr.json", "zz"]
    keys, _, _ = await list_v2(http, emu, prefix="z/", **{"start-after": "z/c/1"})
    assert keys == ["z/d/0", "z/zarr.json"]


async def test_list_pagination(emu: Emulator, http: aiohttp.ClientSession) -> None:
    names = [f"p/{i:02d}" for i in range(7)] + ["p/sub/a", "p/sub/b"]
    for key in names:
        (emu.root / key).parent.mkdir(parents=True, exist_ok=True)
        (emu.root / key).write_bytes(b"1")
    pages: list[tuple[list[str], list[str]]] = []
    token: str | None = None
    while True:
        extra = {"continuation-token": token} if token else {}
        keys, prefixes, token = await list_v2(
            http, emu, prefix="p/", delimiter="/", **{"max-keys": "3"}, **extra
        )
        pages.append((keys, prefixes))
        if token is None:
            break
    assert [len(k) + len(p) for k, p in pages] == [3, 3, 2]
    assert [k for page, _ in pages for k in page] == names[:7]
    assert [p for _, page in pages for p in page] == ["p/sub/"]


async def test_temp_files_are_never_listed(emu: Emulator) -> None:
    store = S3Store(emu.bucket, **emu.storage_options())
    await obstore.put_async(store, "w/k", b"v")
    listed = [m["path"] for m in await obstore.list(store).collect_async()]
    assert listed == ["a/data", "w/k"]


# -- CORS --------------------------------------------------------------------------------


async def test_cors(emu: Emulator, http: aiohttp.ClientSession) -> None:
    _, headers, _ = await fetch(http, "GET", emu.http_url("a/data"), headers={"Range": "bytes=0-1"})
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert "Content-Range" in headers["Access-Control-Expose-Headers"]
    status, headers, _ = await fetch(
        http,
        "OPTIONS",
        emu.http_url("a/data"),
        headers={
            "Origin": "http://viewer.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "range",
        },
    )
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert "GET" in headers["Access-Control-Allow-Methods"]
    assert headers["Access-Control-Allow-Headers"] == "range"
    _, headers, _ = await fetch(http, "GET", emu.http_url("a/missing"))
    assert headers["Access-Control-Allow-Origin"] == "*"


# -- counters, latency, control endpoints --------------------------------------------------


async def test_counters(emu: Emulator, http: aiohttp.ClientSession) -> None:
    await fetch(http, "GET", emu.http_url("a/data"))
    await fetch(http, "GET", emu.http_url("a/data"), headers={"Range": "bytes=0-9"})
    await fetch(http, "HEAD", emu.http_url("a/data"))
    await fetch(http, "PUT", emu.http_url("n"), data=b"12345")
    await fetch(http, "GET", emu.http_url("missing"))
    stats = emu.stats()
    assert stats["requests"] == 5
    assert stats["by_method"] == {"GET": 3, "HEAD": 1, "PUT": 1}
    assert stats["by_kind"] == {"get": 2, "get_range": 1, "head": 1, "put": 1}
    assert stats["by_status"] == {"200": 3, "206": 1, "404": 1}
    assert stats["bytes_written"] == 5
    assert stats["bytes_read"] >= 110  # 100 + 10 bytes of data, plus the 404's XML
    assert stats["inflight"] == 0
    emu.reset_stats()
    assert emu.stats()["requests"] == 0


async def test_latency_holds_requests_in_flight(emu: Emulator, http: aiohttp.ClientSession) -> None:
    emu.set_latency(30_000)  # far past the test: the five are held however slow it runs
    gets = [asyncio.ensure_future(fetch(http, "GET", emu.http_url("a/data"))) for _ in range(5)]
    try:
        for _ in range(500):
            if emu.stats()["inflight"] == 5:
                break
            await asyncio.sleep(0.02)
        stats = emu.stats()
        assert (stats["inflight"], stats["peak_inflight"]) == (5, 5)
        assert stats["latency_ms"] == 30_000
        assert not any(get.done() for get in gets)  # none answered before its latency
    finally:
        for get in gets:
            get.cancel()
    await until_idle(emu)


async def test_control_endpoints(emu: Emulator, http: aiohttp.ClientSession) -> None:
    await fetch(http, "GET", emu.http_url("a/data"))
    status, _, body = await fetch(http, "GET", f"{emu.endpoint}/_emulator/stats")
    assert status == 200 and json.loads(body)["requests"] == 1
    status, _, body = await fetch(
        http,
        "POST",
        f"{emu.endpoint}/_emulator/faults",
        json={"kind": "status", "status": 500, "count": 1},
    )
    assert status == 200 and json.loads(body)[0]["status"] == 500
    assert (await fetch(http, "GET", emu.http_url("a/data")))[0] == 500
    assert (await fetch(http, "GET", emu.http_url("a/data")))[0] == 200
    status, _, _ = await fetch(
        http, "POST", f"{emu.endpoint}/_emulator/faults", json={"kind": "nonsense"}
    )
    assert status == 400
    await fetch(http, "POST", f"{emu.endpoint}/_emulator/latency", json={"ms": 5})
    assert emu.stats()["latency_ms"] == 5
    status, _, body = await fetch(http, "POST", f"{emu.endpoint}/_emulator/reset")
    assert json.loads(body)["requests"] == 0
    assert emu.stats()["requests"] == 0  # control calls are not counted


def test_running_in_thread(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"sync")
    with Emulator(tmp_path).running_in_thread() as emu:
        with urllib.request.urlopen(emu.http_url("k")) as resp:
            assert resp.read() == b"sync"
        assert emu.stats()["requests"] == 1
        port = emu.port
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/bucket/k", timeout=5)


# -- faults ------------------------------------------------------------------------------


async def test_status_fault_for_next_n(emu: Emulator, http: aiohttp.ClientSession) -> None:
    emu.inject("status", count=2)  # 503 SlowDown by default
    url = emu.http_url("a/data")
    results = [await fetch(http, "GET", url) for _ in range(3)]
    assert [r[0] for r in results] == [503, 503, 200]
    assert error_code(results[0][2]) == "SlowDown"
    assert emu.stats()["faults"] == 2


async def test_fault_filters(emu: Emulator, http: aiohttp.ClientSession) -> None:
    (emu.root / "a" / "other").write_bytes(b"o")
    emu.inject("status", status=500, key_glob="a/d*", methods=["get"])
    assert (await fetch(http, "GET", emu.http_url("a/data")))[0] == 500
    assert (await fetch(http, "GET", emu.http_url("a/other")))[0] == 200
    assert (await fetch(http, "HEAD", emu.http_url("a/data")))[0] == 200
    assert (await fetch(http, "GET", emu.http_url("a/data")))[0] == 500  # no count: stays
    emu.clear_faults()
    assert (await fetch(http, "GET", emu.http_url("a/data")))[0] == 200


async def test_fault_rate_is_seeded(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    (tmp_path / "k").write_bytes(b"v")
    outcomes = []
    for _ in range(2):
        async with Emulator(tmp_path, seed=7) as emu:
            emu.inject("status", rate=0.5)
            outcomes.append([(await fetch(http, "GET", emu.http_url("k")))[0] for _ in range(20)])
    assert outcomes[0] == outcomes[1]
    assert {500, 503} & set(outcomes[0]) and 200 in outcomes[0]


async def raw_get(emu: Emulator, key: str) -> bytes:
    """One GET on a fresh connection, without any client-side retry; b"" if reset."""
    reader, writer = await asyncio.open_connection("127.0.0.1", emu.port)
    path = f"/{emu.bucket}/{key}"
    host = f"127.0.0.1:{emu.port}"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    try:
        return await reader.read()
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


async def test_reset_fault(emu: Emulator, http: aiohttp.ClientSession) -> None:
    emu.inject("reset", count=1)
    assert await raw_get(emu, "a/data") == b""
    assert (await raw_get(emu, "a/data")).endswith(DATA)
    emu.inject("reset", count=1)
    # aiohttp's client retries a GET whose connection dropped: the second try succeeds.
    assert (await fetch(http, "GET", emu.http_url("a/data")))[2] == DATA
    assert emu.stats()["faults"] == 2
    assert emu.stats()["by_status"] == {"200": 2}


async def test_truncate_fault(emu: Emulator, http: aiohttp.ClientSession) -> None:
    emu.inject("truncate", count=1)
    with pytest.raises(aiohttp.ClientPayloadError):
        await fetch(http, "GET", emu.http_url("a/data"))
    assert (await fetch(http, "GET", emu.http_url("a/data")))[2] == DATA


async def test_slow_fault_still_delivers(emu: Emulator, http: aiohttp.ClientSession) -> None:
    emu.inject("slow", count=1, delay_s=0.05)
    status, _, body = await fetch(
        http, "GET", emu.http_url("a/data"), headers={"Range": "bytes=1-50"}
    )
    assert (status, body) == (206, DATA[1:51])
    assert emu.stats()["faults"] == 1


async def headers_and_body_times(http: aiohttp.ClientSession, url: str) -> tuple[float, float]:
    """Seconds until the answer's headers, and until its last byte."""
    began = time.monotonic()
    async with http.get(url) as response:
        headers_at = time.monotonic() - began
        assert await response.read() == DATA
    return headers_at, time.monotonic() - began


async def test_late_fault_holds_back_the_first_byte(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    emu.inject("late", count=1, delay_s=1.0)
    headers_at, done_at = await headers_and_body_times(http, emu.http_url("a/data"))
    assert headers_at >= 1.0
    assert done_at - headers_at < 0.5  # the body then comes at once
    assert emu.stats()["faults"] == 1


async def test_a_late_answer_is_dropped_when_its_client_goes(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    emu.inject("late", count=1, delay_s=30.0)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(fetch(http, "GET", emu.http_url("a/data")), 0.2)
    await until_idle(emu)


async def test_a_request_begun_before_a_reset_is_not_in_the_next_peak(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    # A straggler of one test must not count in the next test's peak of requests.
    emu.inject("late", count=1, delay_s=30.0)
    straggler = asyncio.ensure_future(fetch(http, "GET", emu.http_url("a/data")))
    try:
        for _ in range(250):
            if emu.stats()["inflight"] == 1:
                break
            await asyncio.sleep(0.02)
        emu.reset_stats()
        status, _, _ = await fetch(http, "GET", emu.http_url("a/data"))
        stats = emu.stats()
        assert (status, stats["requests"], stats["peak_inflight"]) == (200, 1, 1)
        assert stats["inflight"] == 1  # the straggler, still held
    finally:
        straggler.cancel()
    await until_idle(emu)


async def until_idle(emu: Emulator) -> None:
    for _ in range(50):  # the server notices the closed connection within 50 ms
        if emu.stats()["inflight"] == 0:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"still in flight: {emu.stats()['inflight']}")


async def test_an_answer_held_for_latency_is_dropped_when_its_client_goes(
    emu: Emulator, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    # The abandoned copy of a hedged read meets the slow tail: it must not count as in
    # flight for the whole of its wait, nor end as a server error.
    emu.set_latency(30_000)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(fetch(http, "GET", emu.http_url("a/data")), 0.2)
    await until_idle(emu)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


async def test_a_client_gone_mid_body_is_not_a_server_error(
    tmp_path: Path, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "big").write_bytes(b"z" * 4_000_000)
    async with Emulator(tmp_path, bandwidth_mbps=10) as emu:  # a 0.4 s body
        async with http.get(emu.http_url("big")) as response:
            await response.content.readexactly(100_000)
            response.close()  # drop the connection with the body half sent
        await until_idle(emu)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


async def test_slow_fault_holds_back_the_body(emu: Emulator, http: aiohttp.ClientSession) -> None:
    emu.inject("slow", count=1, delay_s=1.0)
    headers_at, done_at = await headers_and_body_times(http, emu.http_url("a/data"))
    assert headers_at < 0.5
    assert done_at >= 1.0


def test_unknown_fault_kind(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Emulator(tmp_path).inject("explode")


def test_addresses_and_options(tmp_path: Path) -> None:
    emu = Emulator(tmp_path, bucket="b", port=1234)
    assert emu.endpoint == "http://127.0.0.1:1234"
    assert emu.s3_url("x/y") == "s3://b/x/y"
    assert emu.http_url("x/y") == "http://127.0.0.1:1234/b/x/y"
    assert emu.storage_options()["endpoint"] == emu.endpoint


# -- `aiozarr serve` ---------------------------------------------------------------------


async def test_serve_command(
    tmp_path: Path, http: aiohttp.ClientSession, capsys: pytest.CaptureFixture[str]
) -> None:
    from aiozarr.cli.serve import build_parser, run_serve

    args = build_parser().parse_args([str(tmp_path), "--port", "0", "--latency-ms", "5"])
    assert (args.port, args.latency_ms, args.host) == (0, 5.0, "127.0.0.1")
    assert (args.bandwidth_mbps, args.tail_rate, args.tail_ms) == (0.0, 0.0, 200.0)
    args = build_parser().parse_args(
        [str(tmp_path), "--bandwidth-mbps", "90", "--tail-rate", "0.02", "--tail-ms", "150"]
    )
    assert (args.bandwidth_mbps, args.tail_rate, args.tail_ms) == (90.0, 0.02, 150.0)
    help_text = build_parser().format_help()
    for option in ("--bandwidth-mbps", "--tail-rate", "--tail-ms", "--latency-ms"):
        assert option in help_text
    assert help_text.count("(default:") >= 7
    (tmp_path / "zarr.json").write_bytes(b"{}")
    started: asyncio.Future[Emulator] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        run_serve(
            tmp_path,
            port=0,
            latency_ms=5,
            bandwidth_mbps=90,
            tail_rate=0.02,
            tail_ms=150,
            on_start=started.set_result,
        )
    )
    emu = await asyncio.wait_for(started, 30)
    assert emu.bucket == tmp_path.name
    assert emu.network() == {
        "latency_ms": 5,
        "bandwidth_mbps": 90,
        "tail_rate": 0.02,
        "tail_ms": 150,
    }
    assert (await fetch(http, "GET", emu.http_url("zarr.json")))[2] == b"{}"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert emu.http_url() in capsys.readouterr().out


def test_serve_rejects_a_missing_directory(tmp_path: Path) -> None:
    from aiozarr.cli.serve import main

    with pytest.raises(SystemExit, match="not a directory"):
        main([str(tmp_path / "nope"), "--port", "0"])
    with pytest.raises(SystemExit, match="tail_rate"):
        main([str(tmp_path), "--port", "0", "--tail-rate", "1.5"])


# -- cloud-like network shaping ----------------------------------------------------------


async def timed_get(http: aiohttp.ClientSession, url: str) -> tuple[float, bytes]:
    started = asyncio.get_running_loop().time()
    _, _, body = await fetch(http, "GET", url)
    return asyncio.get_running_loop().time() - started, body


async def test_bandwidth_caps_each_response(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    body = bytes(range(256)) * (4_000_000 // 256)  # ~4 MB
    (tmp_path / "big").write_bytes(body)
    async with Emulator(tmp_path, bandwidth_mbps=10) as emu:
        seconds, got = await timed_get(http, emu.http_url("big"))
        assert got == body
        assert seconds >= 0.99 * len(body) / 10e6  # 4 MB at 10 MB/s: >= 0.4 s
        assert emu.stats()["bytes_read"] == len(body)
        # Two responses at once each get the full rate: together they move twice the
        # bytes of one in less time than one connection would need for both (0.8 s; the
        # margin of 0.2 s is for a busy machine, where this ran 7 ms over a margin of 0).
        emu.reset_stats()
        (a, got_a), (b, got_b) = await asyncio.gather(
            timed_get(http, emu.http_url("big")), timed_get(http, emu.http_url("big"))
        )
        assert got_a == got_b == body
        assert emu.stats()["peak_inflight"] == 2
        assert min(a, b) >= 0.99 * len(body) / 10e6
        assert max(a, b) < 1.5 * len(body) / 10e6


async def test_bandwidth_caps_a_body_streamed_from_its_file(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """Bodies over 16 MiB are sent from the open file piece by piece: paced all the same."""
    (tmp_path / "huge").write_bytes(b"z" * 20_000_000)
    async with Emulator(tmp_path, bandwidth_mbps=200) as emu:
        seconds, got = await timed_get(http, emu.http_url("huge"))
        assert len(got) == 20_000_000
        assert seconds >= 0.99 * 20_000_000 / 200e6  # 20 MB at 200 MB/s: >= 0.1 s


async def test_bandwidth_caps_each_upload(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    body = bytes(range(256)) * (4_000_000 // 256)  # ~4 MB
    async with Emulator(tmp_path, bandwidth_mbps=40) as emu:
        started = time.monotonic()
        async with http.put(emu.http_url("up"), data=body) as response:
            assert response.status == 200
        assert time.monotonic() - started >= 0.99 * len(body) / 40e6  # 4 MB: >= 0.1 s
        assert (tmp_path / "up").read_bytes() == body
        assert emu.stats()["bytes_written"] == len(body)


async def test_bandwidth_applies_to_ranges_and_can_change(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    (tmp_path / "big").write_bytes(b"x" * 2_000_000)
    async with Emulator(tmp_path) as emu:
        emu.set_network(bandwidth_mbps=20)
        started = asyncio.get_running_loop().time()
        status, _, got = await fetch(
            http, "GET", emu.http_url("big"), headers={"Range": "bytes=0-999999"}
        )
        assert (status, len(got)) == (206, 1_000_000)
        assert asyncio.get_running_loop().time() - started >= 0.99 * 1_000_000 / 20e6
        assert emu.network()["bandwidth_mbps"] == 20
        status, _, got = await fetch(
            http,
            "POST",
            f"{emu.endpoint}/_emulator/network",
            json={"bandwidth_mbps": 0, "tail_rate": 0.5},
        )
        assert status == 200 and json.loads(got)["tail_rate"] == 0.5
        assert emu.network()["bandwidth_mbps"] == 0
        status, _, _ = await fetch(
            http, "POST", f"{emu.endpoint}/_emulator/network", json={"tail_rate": 2}
        )
        assert status == 400
    with pytest.raises(ValueError, match="bandwidth_mbps"):
        Emulator(tmp_path, bandwidth_mbps=-1)


async def test_slow_tail_fraction_is_binomial(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    (tmp_path / "k").write_bytes(b"k")
    n, rate, tail_ms = 400, 0.1, 100
    async with Emulator(tmp_path, tail_rate=rate, tail_ms=tail_ms, seed=7) as emu:
        times: list[float] = []
        for _ in range(n // 20):
            batch = await asyncio.gather(*(timed_get(http, emu.http_url("k")) for _ in range(20)))
            times += [t for t, _ in batch]
        tails = emu.stats()["tails"]
    # Binomial(400, 0.1): mean 40, sd 6; +-4 sd.
    sd = (n * rate * (1 - rate)) ** 0.5
    assert abs(tails - n * rate) <= 4 * sd
    # Every held-back answer did wait (a lower bound; the machine can only add to it).
    assert sum(t >= tail_ms / 1000 for t in times) >= tails
    # Seeded: the same seed draws the same tail, from the start or reseeded.
    async with Emulator(tmp_path, tail_rate=rate, tail_ms=1, seed=7) as emu:
        for _ in range(n):
            await fetch(http, "GET", emu.http_url("k"))
        assert emu.stats()["tails"] == tails
        emu.reset_stats()
        emu.set_network(seed=7)
        for _ in range(n):
            await fetch(http, "GET", emu.http_url("k"))
        assert emu.stats()["tails"] == tails


async def test_get_serves_one_version_under_concurrent_puts(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    sizes = [100_000, 300_000, 50_000, 200_000]
    versions = {size: bytes([i + 1]) * size for i, size in enumerate(sizes)}
    async with Emulator(tmp_path) as emu:
        url = emu.http_url("shared")
        await fetch(http, "PUT", url, data=versions[sizes[0]])
        stop = asyncio.Event()
        puts = 0

        async def put_until_stopped() -> None:
            nonlocal puts
            while not stop.is_set():
                await fetch(http, "PUT", url, data=versions[sizes[puts % len(sizes)]])
                puts += 1

        async def get_while_putting() -> list[tuple[int, int, bytes]]:
            # until 20 puts have landed meanwhile, however the machine shares its time
            # between readers and writers (at least 50 reads each)
            out = []
            while puts < 20 or len(out) < 50:
                status, headers, body = await fetch(http, "GET", url)
                out.append((status, int(headers["Content-Length"]), body))
            return out

        putters = [asyncio.create_task(put_until_stopped()) for _ in range(2)]
        batches = await asyncio.gather(*(get_while_putting() for _ in range(4)))
        results = [result for batch in batches for result in batch]
        stop.set()
        await asyncio.gather(*putters)
    torn = [
        (n, len(body))
        for status, n, body in results
        if status != 200 or n not in versions or body != versions[n]
    ]
    assert torn == []


# -- as S3 answers: a 416's size, a HEAD's range, a conditional DELETE ---------------------


@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_an_unsatisfiable_range_says_the_size(
    emu: Emulator, http: aiohttp.ClientSession, method: str
) -> None:
    status, headers, _ = await fetch(
        http, method, emu.http_url("a/data"), headers={"Range": "bytes=100-"}
    )
    assert (status, headers.get("Content-Range")) == (416, "bytes */100")


@pytest.mark.parametrize(
    ("header", "length", "content_range"),
    [("bytes=10-19", "10", "bytes 10-19/100"), ("bytes=-5", "5", "bytes 95-99/100")],
)
async def test_head_with_a_range_is_206_with_the_ranges_length(
    emu: Emulator, http: aiohttp.ClientSession, header: str, length: str, content_range: str
) -> None:
    status, headers, body = await fetch(
        http, "HEAD", emu.http_url("a/data"), headers={"Range": header}
    )
    assert (status, body) == (206, b"")
    assert (headers["Content-Length"], headers["Content-Range"]) == (length, content_range)


async def test_delete_with_if_match_deletes_only_the_version_named(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    url = emu.http_url("a/data")
    etag = (await fetch(http, "HEAD", url))[1]["ETag"]
    status, _, body = await fetch(http, "DELETE", url, headers={"If-Match": '"other"'})
    assert (status, error_code(body)) == (412, "PreconditionFailed")
    assert (emu.root / "a" / "data").read_bytes() == DATA  # kept
    assert (await fetch(http, "DELETE", url, headers={"If-Match": etag}))[0] == 204
    assert not (emu.root / "a" / "data").exists()
    status, _, body = await fetch(http, "DELETE", url, headers={"If-Match": etag})
    assert (status, error_code(body)) == (404, "NoSuchKey")  # S3: nothing to match
    (emu.root / "a").mkdir()  # its emptied folder went with it
    (emu.root / "a" / "data").write_bytes(DATA)
    assert (await fetch(http, "DELETE", url, headers={"If-Match": "*"}))[0] == 204
    assert not (emu.root / "a" / "data").exists()


async def test_a_file_rewritten_in_place_keeping_size_and_mtime_gets_a_new_etag(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    """A file replaced under the emulator's root as `cp -p` does (same inode, size and
    mtime) is another version: a reader's If-Match must not take it for the old one."""
    path = emu.root / "kept-mtime"
    path.write_bytes(b"first")
    before = (await fetch(http, "HEAD", emu.http_url("kept-mtime")))[1]["ETag"]
    stat = path.stat()
    path.write_bytes(b"other")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_ino == stat.st_ino
    after = (await fetch(http, "HEAD", emu.http_url("kept-mtime")))[1]["ETag"]
    assert after != before
    stale = await fetch(http, "GET", emu.http_url("kept-mtime"), headers={"If-Match": before})
    assert stale[0] == 412
