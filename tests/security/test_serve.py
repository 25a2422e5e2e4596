"""`aiozarr serve` cannot be turned against the person running it.

Each test is one attack on the server, made with real HTTP requests on 127.0.0.1: a web
page the user visits (cross-site writes, DNS rebinding, control endpoints), a listing or
a key that walks out of the served folder (`..`, symlinks), and a client that holds the
server's resources (whole-body uploads, half-open connections, slow listings).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import aiohttp
import pytest
import yarl

from aiozarr.emulator import Emulator

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
EVIL = "http://evil.example"
TMP_DIR = ".aiozarr-emulator-tmp"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """(the served folder, a folder beside it holding a secret), and links from the one to
    the other: `out` (a directory) and `secret-link` (a file)."""
    served, outside = tmp_path / "served", tmp_path / "outside"
    served.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(b"TOP-SECRET")
    (served / "zarr.json").write_bytes(b"{}")
    (served / "out").symlink_to(outside, target_is_directory=True)
    (served / "secret-link").symlink_to(outside / "secret")
    return served, outside


@contextlib.contextmanager
def serve(directory: Path, *options: str) -> Iterator[tuple[int, str]]:
    """`aiozarr serve DIRECTORY --port 0 OPTIONS` in a child process: (port, its banner)."""
    with serving(directory, *options) as (_, port, banner):
        yield port, banner


@contextlib.contextmanager
def serving(
    directory: Path, *options: str, **popen: Any
) -> Iterator[tuple[subprocess.Popen[str], int, str]]:
    """As `serve`: (the child process, port, its banner); `popen`: more arguments of
    `subprocess.Popen`."""
    process = subprocess.Popen(
        [sys.executable, "-m", "aiozarr", "serve", str(directory), "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.strip().startswith("HTTP:"):
                port = yarl.URL(line.split("HTTP:", 1)[1].strip()).port
                break
        else:
            raise AssertionError("aiozarr serve exited:\n" + "".join(lines))
        for line in process.stdout:  # the rest of the banner
            lines.append(line)
            if line.strip().startswith("stats:"):
                break
        assert port is not None
        yield process, port, "".join(lines)
    finally:
        process.terminate()
        try:  # a loaded machine (the suite on two cores) once took over 10 s
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            said = process.communicate()[0]
            message = f"aiozarr serve did not stop on SIGTERM; it said:\n{said}"
            raise AssertionError(message) from None
        finally:
            if process.stdout is not None:
                process.stdout.close()


async def fetch(
    http: aiohttp.ClientSession, method: str, url: str | yarl.URL, **kwargs: object
) -> tuple[int, dict[str, str], bytes]:
    async with http.request(method, url, **kwargs) as resp:  # type: ignore[arg-type]
        return resp.status, dict(resp.headers), await resp.read()


def listed(body: bytes) -> list[str]:
    root = ElementTree.fromstring(body)
    keys = [e.findtext(f"{NS}Key") or "" for e in root.iter(f"{NS}Contents")]
    return keys + [e.findtext(f"{NS}Prefix") or "" for e in root.iter(f"{NS}CommonPrefixes")]


# -- the folder's edge -------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["../outside/", "../../../../../../etc/", "a/../../", "/etc/"])
async def test_a_listing_prefix_cannot_leave_the_folder(
    folders: tuple[Path, Path], http: aiohttp.ClientSession, prefix: str
) -> None:
    served, _ = folders
    with serve(served) as (port, _):
        status, _, body = await fetch(
            http,
            "GET",
            f"http://127.0.0.1:{port}/served/",
            params={"list-type": "2", "prefix": prefix},
        )
    assert status == 400, body
    assert b"secret" not in body and b"passwd" not in body


async def test_a_listing_does_not_follow_symlinks_out(
    folders: tuple[Path, Path], http: aiohttp.ClientSession
) -> None:
    served, _ = folders
    (served / "inside-link").symlink_to(served / "zarr.json")  # inside: still listed
    async with Emulator(served) as emu:
        expected = {"": ["inside-link", "zarr.json"], "secret": [], "out/": None}
        for prefix, keys in expected.items():
            status, _, body = await fetch(
                http,
                "GET",
                f"{emu.endpoint}/{emu.bucket}",
                params={"list-type": "2", "prefix": prefix},
            )
            if keys is None:  # the prefix itself leads outside
                assert status == 403, body
            else:
                assert (status, listed(body)) == (200, keys)


def _through_link(emu: Emulator, method: str) -> dict[str, object]:
    """One request per operation on `out/secret`, a key whose path leads outside."""
    url = emu.http_url("out/secret")
    delete = (
        "<Delete><Object><Key>out/secret</Key></Object>"
        "<Object><Key>secret-link</Key></Object></Delete>"
    )
    return {
        "GET": {"method": "GET", "url": url},
        "GET-file-link": {"method": "GET", "url": emu.http_url("secret-link")},
        "HEAD": {"method": "HEAD", "url": url},
        "PUT": {"method": "PUT", "url": url, "data": b"overwritten"},
        "PUT-file-link": {
            "method": "PUT",
            "url": emu.http_url("secret-link"),
            "data": b"overwritten",
        },
        "PUT-new": {"method": "PUT", "url": emu.http_url("out/new"), "data": b"new"},
        "DELETE": {"method": "DELETE", "url": url},
        "multi-delete": {"method": "POST", "url": f"{emu.http_url()}?delete", "data": delete},
    }[method]


@pytest.mark.parametrize(
    "operation",
    ["GET", "GET-file-link", "HEAD", "PUT", "PUT-file-link", "PUT-new", "DELETE", "multi-delete"],
)
async def test_a_symlink_out_is_neither_read_nor_written_through(
    folders: tuple[Path, Path], http: aiohttp.ClientSession, operation: str
) -> None:
    served, outside = folders
    async with Emulator(served) as emu:
        spec = _through_link(emu, operation)
        status, _, body = await fetch(
            http,
            spec.pop("method"),
            spec.pop("url"),  # type: ignore[arg-type]
            **spec,
        )
    assert b"TOP-SECRET" not in body
    assert (outside / "secret").read_bytes() == b"TOP-SECRET"
    assert not (outside / "new").exists()
    if operation == "multi-delete":
        errors = ElementTree.fromstring(body).findall(f".//{NS}Error")
        assert len(errors) == 2, body
    else:
        assert status == 403, (status, body)
    assert (served / "secret-link").is_symlink()


async def test_a_multipart_upload_cannot_write_through_a_symlink(
    folders: tuple[Path, Path], http: aiohttp.ClientSession
) -> None:
    served, outside = folders
    async with Emulator(served) as emu:
        status, _, body = await fetch(http, "POST", emu.http_url("out/multi") + "?uploads")
    assert status == 403, body
    assert not (outside / "multi").exists()


# Backslashes and NUL were let through before; the others were already refused, and stay.
INVALID_KEYS = ["a%5Cb", "a%00b", "%2Fetc%2Fpasswd", "a/%2E%2E/zarr.json", f"{TMP_DIR}/x"]


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "DELETE"])
async def test_invalid_keys_are_refused_by_every_operation(
    folders: tuple[Path, Path], http: aiohttp.ClientSession, method: str
) -> None:
    served, _ = folders
    async with Emulator(served) as emu:
        for raw_key in INVALID_KEYS:
            url = yarl.URL(f"{emu.http_url()}/{raw_key}", encoded=True)
            status, _, _ = await fetch(http, method, url, data=b"x" if method == "PUT" else None)
            assert status == 400, raw_key
    # A writable server's temp folder (made as it starts) holds nothing.
    assert sorted(p.name for p in served.iterdir()) == [TMP_DIR, "out", "secret-link", "zarr.json"]
    assert list((served / TMP_DIR).iterdir()) == []


# -- a web page the user visits ----------------------------------------------------------


async def test_serve_is_read_only_unless_asked(
    folders: tuple[Path, Path], http: aiohttp.ClientSession
) -> None:
    served, _ = folders
    (served / "c").mkdir()
    (served / "c" / "0").write_bytes(b"chunk")
    with serve(served) as (port, banner):
        base = f"http://127.0.0.1:{port}/served"
        assert "read-only" in banner
        assert (await fetch(http, "PUT", f"{base}/zarr.json", data=b"x"))[0] == 403
        assert (await fetch(http, "DELETE", f"{base}/c/0"))[0] == 403
        delete = "<Delete><Object><Key>c/0</Key></Object></Delete>"
        await fetch(
            http, "POST", f"{base}?delete", data=delete, headers={"Content-Type": "text/plain"}
        )
        assert (await fetch(http, "POST", f"{base}/big?uploads"))[0] == 403
    assert (served / "zarr.json").read_bytes() == b"{}"
    assert (served / "c" / "0").read_bytes() == b"chunk"
    with serve(served, "--allow-writes") as (port, banner):
        assert "writes allowed" in banner
        put = await fetch(http, "PUT", f"http://127.0.0.1:{port}/served/zarr.json", data=b"[]")
        assert put[0] == 200
    assert (served / "zarr.json").read_bytes() == b"[]"


async def test_cross_site_writes_are_refused(
    folders: tuple[Path, Path], http: aiohttp.ClientSession
) -> None:
    served, _ = folders
    (served / "c").mkdir()
    (served / "c" / "0").write_bytes(b"chunk")
    async with Emulator(served) as emu:  # writes on
        evil = {"Origin": EVIL}
        status, headers, _ = await fetch(
            http, "PUT", emu.http_url("zarr.json"), data=b"x", headers=evil
        )
        assert status == 403 and "Access-Control-Allow-Origin" not in headers
        assert (await fetch(http, "DELETE", emu.http_url("c/0"), headers=evil))[0] == 403
        # A "simple" request: no preflight, so the server is the only one to say no.
        delete = "<Delete><Object><Key>c/0</Key></Object></Delete>"
        status, _, _ = await fetch(
            http,
            "POST",
            f"{emu.http_url()}?delete",
            data=delete,
            headers={**evil, "Content-Type": "text/plain"},
        )
        assert status == 403
        fetch_metadata = {"Sec-Fetch-Site": "cross-site"}
        assert (await fetch(http, "DELETE", emu.http_url("c/0"), headers=fetch_metadata))[0] == 403
        assert (await fetch(http, "PUT", emu.http_url("x"), headers={"Origin": "null"}))[0] == 403
        # Preflight for a write: no CORS grant.
        status, headers, _ = await fetch(
            http,
            "OPTIONS",
            emu.http_url("zarr.json"),
            headers={**evil, "Access-Control-Request-Method": "PUT"},
        )
        assert "PUT" not in headers.get("Access-Control-Allow-Methods", "")
        assert "Access-Control-Allow-Origin" not in headers
        assert (served / "zarr.json").read_bytes() == b"{}"
        assert (served / "c" / "0").read_bytes() == b"chunk"
        # Reads stay open to any page (a viewer), and the server's own pages may write.
        status, headers, _ = await fetch(http, "GET", emu.http_url("c/0"), headers=evil)
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "*"
        own = {"Origin": emu.endpoint}
        assert (await fetch(http, "PUT", emu.http_url("zarr.json"), data=b"[]", headers=own))[
            0
        ] == 200
        status, headers, _ = await fetch(http, "PUT", emu.http_url("k"), data=b"v")
        assert status == 200 and "Access-Control-Allow-Origin" not in headers


async def test_control_endpoints_are_off_unless_asked(
    folders: tuple[Path, Path], http: aiohttp.ClientSession
) -> None:
    served, _ = folders
    fault = {"kind": "status", "status": 500}
    with serve(served) as (port, _):
        base = f"http://127.0.0.1:{port}"
        for path, body in (
            ("faults", fault),
            ("latency", {"ms": 5000}),
            ("reset", {}),
            ("network", {"latency_ms": 5000}),
        ):
            status, _, _ = await fetch(http, "POST", f"{base}/_emulator/{path}", json=body)
            assert status == 404, path
        assert (await fetch(http, "GET", f"{base}/served/zarr.json"))[0] == 200
    with serve(served, "--faults") as (port, banner):
        assert "faults" in banner
        base = f"http://127.0.0.1:{port}"
        assert (await fetch(http, "POST", f"{base}/_emulator/faults", json=fault))[0] == 200
        assert (await fetch(http, "GET", f"{base}/served/zarr.json"))[0] == 500


BAD_CONTROL = {
    "latency": [{"ms": "abc"}, {"ms": -1}, {}, [5]],
    "network": [{"latency_ms": "x"}, {"bogus": 1}, {"bandwidth_mbps": float("inf")}],
    "faults": [
        {"kind": "status", "status": "x"},
        {"kind": "status", "status": 200},
        {"kind": "status", "count": 0},
        {"kind": "status", "count": 1.5},
        {"kind": "status", "rate": 2},
        {"kind": "late", "delay_s": -1},
        {"kind": "status", "methods": "GET"},
        {"kind": "status", "key_glob": 5},
        {"kind": 5},
        "status",
    ],
}


@pytest.mark.parametrize("path", sorted(BAD_CONTROL))
async def test_control_values_are_checked(
    tmp_path: Path, http: aiohttp.ClientSession, path: str
) -> None:
    async with Emulator(tmp_path) as emu:
        for body in BAD_CONTROL[path]:
            url = f"{emu.endpoint}/_emulator/{path}"
            status, _, answer = await fetch(http, "POST", url, json=body)
            assert status == 400, (body, answer)
            assert json.loads(answer)["error"]
        assert emu.stats()["latency_ms"] == 0 and emu.network()["bandwidth_mbps"] == 0
        status, _, faults = await fetch(http, "POST", f"{emu.endpoint}/_emulator/faults", json={})
        assert (status, json.loads(faults)) == (200, [])


async def test_control_endpoints_take_json_from_their_own_origin_only(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with Emulator(tmp_path) as emu:
        url = f"{emu.endpoint}/_emulator/faults"
        spec = json.dumps({"kind": "status", "status": 500})
        for content_type in ("text/plain", "application/x-www-form-urlencoded"):
            status, _, _ = await fetch(
                http, "POST", url, data=spec, headers={"Content-Type": content_type}
            )
            assert status == 415, content_type
        status, _, _ = await fetch(
            http,
            "POST",
            url,
            data=spec,
            headers={"Content-Type": "application/json", "Origin": EVIL},
        )
        assert status == 403
        status, _, _ = await fetch(
            http,
            "POST",
            f"{emu.endpoint}/_emulator/latency",
            data='{"ms": 9000}',
            headers={"Content-Type": "text/plain"},
        )
        assert status == 415
        assert emu.stats()["latency_ms"] == 0
        status, _, faults = await fetch(http, "POST", url, json={})
        assert json.loads(faults) == []


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io"])
async def test_a_foreign_host_header_is_refused(
    folders: tuple[Path, Path], http: aiohttp.ClientSession, host: str
) -> None:
    served, _ = folders
    with serve(served) as (port, _):
        url = f"http://127.0.0.1:{port}/served/zarr.json"
        status, _, _ = await fetch(http, "GET", url, headers={"Host": host.format(port=port)})
        assert status == 403
        status, _, _ = await fetch(
            http,
            "GET",
            f"http://127.0.0.1:{port}/served/",
            params={"list-type": "2"},
            headers={"Host": host.format(port=port)},
        )
        assert status == 403
        for own in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
            assert (await fetch(http, "GET", url, headers={"Host": own}))[0] == 200, own
    with serve(served, "--allow-host", "evil.example") as (port, _):
        url = f"http://127.0.0.1:{port}/served/zarr.json"
        assert (await fetch(http, "GET", url, headers={"Host": "evil.example"}))[0] == 200


# -- holding the server's resources ------------------------------------------------------


async def send_raw(port: int, head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    await writer.drain()
    return reader, writer


async def until(condition: Callable[[], bool], what: str, limit_s: float = 10.0) -> None:
    """Wait until `condition()` holds: fail naming `what` after `limit_s` seconds."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


async def test_an_upload_over_the_cap_is_refused_before_its_body(tmp_path: Path) -> None:
    async with Emulator(tmp_path) as emu:  # the default cap: 5 GiB, as S3's single PUT
        head = (
            f"PUT /{emu.bucket}/huge HTTP/1.1\r\nHost: 127.0.0.1:{emu.port}\r\n"
            f"Content-Length: {6 << 30}\r\n\r\n"
        ).encode()
        reader, writer = await send_raw(emu.port, head + b"x" * 1000)
        try:
            answer = await asyncio.wait_for(reader.read(1 << 16), 5)
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 413"), answer
    assert not (tmp_path / "huge").exists()


async def test_an_upload_streams_to_disk(tmp_path: Path) -> None:
    async with Emulator(tmp_path) as emu:
        # 3 MiB of a 4 MiB body sent: its bytes are on disk already, not held in memory.
        head = (
            f"PUT /{emu.bucket}/streamed HTTP/1.1\r\nHost: 127.0.0.1:{emu.port}\r\n"
            f"Content-Length: {4 << 20}\r\n\r\n"
        ).encode()
        reader, writer = await send_raw(emu.port, head + b"a" * (3 << 20))
        try:

            def on_disk() -> int:
                temps = (tmp_path / TMP_DIR).glob("*") if (tmp_path / TMP_DIR).exists() else []
                return sum(p.stat().st_size for p in temps)

            await until(lambda: on_disk() >= 1 << 20, "a MiB of the body on disk")
            assert not (tmp_path / "streamed").exists()
            writer.write(b"a" * (1 << 20))
            answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            assert answer.startswith(b"HTTP/1.1 200"), answer
        finally:
            writer.close()
        assert (tmp_path / "streamed").stat().st_size == 4 << 20
        assert list((tmp_path / TMP_DIR).iterdir()) == []


async def test_an_upload_stops_at_the_cap(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    async with Emulator(tmp_path, max_upload_bytes=8 << 20) as emu:

        async def body() -> AsyncIterator[bytes]:  # no length given: chunked
            for _ in range(12):
                yield b"b" * (1 << 20)

        status, _, _ = await fetch(http, "PUT", emu.http_url("too-big"), data=body())
        assert status == 413
        assert not (tmp_path / "too-big").exists()
        assert list((tmp_path / TMP_DIR).iterdir()) == []
        assert (await fetch(http, "PUT", emu.http_url("fits"), data=b"x" * (8 << 20)))[0] == 200


async def test_half_open_connections_are_dropped(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"v")
    async with Emulator(tmp_path, header_timeout=0.5) as emu:
        partial = f"GET /{emu.bucket}/k HTTP/1.1\r\nHost: 127.0.0.1".encode()
        connections = [await send_raw(emu.port, partial) for _ in range(20)]
        try:
            started = time.monotonic()
            answers = await asyncio.wait_for(
                asyncio.gather(*(reader.read() for reader, _ in connections)), 5
            )
            assert time.monotonic() - started < 3
            assert all(not a.startswith(b"HTTP/1.1 200") for a in answers)
        finally:
            for _, writer in connections:
                writer.close()


async def test_connections_are_bounded(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    (tmp_path / "k").write_bytes(b"v")
    async with Emulator(tmp_path, max_connections=4, header_timeout=30) as emu:
        idle = [await send_raw(emu.port, b"") for _ in range(4)]
        try:
            await until(lambda: emu.connections == 4, "the server to hold the idle connections")
            reader, writer = await send_raw(
                emu.port, f"GET /{emu.bucket}/k HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
            )
            answer = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 503"), answer
        finally:
            for _, w in idle:
                w.close()
        await until(lambda: emu.connections == 0, "the server to drop the idle connections")
        status, _, body = await fetch(http, "GET", emu.http_url("k"))  # served again
        assert (status, body) == (200, b"v")


def test_a_cap_the_file_limit_cannot_hold_is_lowered_to_fit(tmp_path: Path) -> None:
    """`--max-connections 1000` under `ulimit -n 256`: past the limit the server could
    accept nothing, not even to answer 503, and a client waited in the listen backlog
    until its own timeout. The cap is lowered to what fits, and said."""
    import resource

    (tmp_path / "k").write_bytes(b"v")

    def small_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    with serving(tmp_path, preexec_fn=small_limit) as (_, port, banner):
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
                client.sendall(f"GET /{tmp_path.name}/k HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert client.recv(12) == b"HTTP/1.1 503"  # answered, not left waiting
        finally:
            for connection in idle:
                connection.close()
    assert "at most 96 connections at once, not 1000" in banner


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A served folder of 16,000 objects: 160 folders of 100."""
    root = tmp_path_factory.mktemp("many")
    for i in range(160):
        folder = root / f"d{i:03d}"
        folder.mkdir()
        for j in range(100):
            (folder / f"{j:03d}").write_bytes(b"")
    (root / "small").write_bytes(b"small")
    return root


async def test_listings_are_paged_and_capped(many_files: Path, http: aiohttp.ClientSession) -> None:
    async with Emulator(many_files, read_only=True) as emu:
        url = emu.http_url() + "/"
        status, _, body = await fetch(
            http, "GET", url, params={"list-type": "2", "max-keys": "5000"}
        )
        assert status == 200
        root = ElementTree.fromstring(body)
        assert len(listed(body)) == 1000
        assert root.findtext(f"{NS}IsTruncated") == "true"
        token = root.findtext(f"{NS}NextContinuationToken")
        assert token
        status, _, body = await fetch(
            http,
            "GET",
            url,
            params={"list-type": "2", "max-keys": "2", "continuation-token": token},
        )
        assert listed(body) == ["d010/000", "d010/001"]
        for bad in ({"max-keys": "-1"}, {"max-keys": "many"}, {"continuation-token": "%%%"}):
            status, _, _ = await fetch(http, "GET", url, params={"list-type": "2", **bad})
            assert status == 400, bad


async def test_listings_do_not_hold_up_other_requests(
    many_files: Path, http: aiohttp.ClientSession
) -> None:
    async with Emulator(many_files, read_only=True) as emu:
        url = emu.http_url() + "/"
        listings = [
            asyncio.create_task(fetch(http, "GET", url, params={"list-type": "2"}))
            for _ in range(8)
        ]
        await until(lambda: emu.stats()["by_kind"].get("list") == 8, "the listings to begin")
        started = time.monotonic()
        status, _, body = await fetch(http, "GET", emu.http_url("small"))
        waited = time.monotonic() - started
        assert (status, body) == (200, b"small")
        assert all(r[0] == 200 for r in await asyncio.gather(*listings))
    assert waited < 0.3, f"a GET waited {waited:.2f} s behind 8 listings"
