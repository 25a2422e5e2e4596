"""CompleteMultipartUpload as S3 answers it: a Complete that fails leaves the upload to
retry; a repeated Complete of a finished upload answers as the first did; the part list
is checked (ETags, order, sizes); an unknown upload cannot be aborted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from xml.etree import ElementTree

import aiohttp
import pytest

from aiozarr.emulator import Emulator

BIG = b"p" * (5 << 20)  # S3's least part but for the last


@pytest.fixture
async def emu(tmp_path: Path) -> AsyncIterator[Emulator]:
    async with Emulator(tmp_path) as emu:
        yield emu


async def call(
    http: aiohttp.ClientSession, method: str, url: str, data: bytes | str = b""
) -> tuple[int, str, ElementTree.Element | None, str]:
    """Status, error code, the XML answer and its ETag header."""
    async with http.request(method, url, data=data) as resp:
        body = await resp.read()
        root = ElementTree.fromstring(body) if body else None
        code = (root.findtext("Code") or "") if root is not None else ""
        return resp.status, code, root, resp.headers.get("ETag", "")


async def start(http: aiohttp.ClientSession, emu: Emulator, key: str) -> str:
    _, _, root, _ = await call(http, "POST", emu.http_url(key) + "?uploads")
    assert root is not None
    return root.findtext("UploadId") or ""


async def part(
    http: aiohttp.ClientSession, emu: Emulator, key: str, upload: str, n: int, data: bytes
) -> str:
    url = emu.http_url(key) + f"?uploadId={upload}&partNumber={n}"
    status, _, _, etag = await call(http, "PUT", url, data)
    assert status == 200
    return etag


def complete_xml(parts: list[tuple[int, str]]) -> str:
    items = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>" for n, e in parts)
    return f"<CompleteMultipartUpload>{items}</CompleteMultipartUpload>"


async def complete(
    http: aiohttp.ClientSession, emu: Emulator, key: str, upload: str, parts: list[tuple[int, str]]
) -> tuple[int, str, str]:
    url = emu.http_url(key) + f"?uploadId={upload}"
    status, code, root, _ = await call(http, "POST", url, complete_xml(parts))
    etag = "" if root is None or code else root.findtext("ETag") or ""
    return status, code, etag


async def test_a_failed_complete_can_be_retried(emu: Emulator, http: aiohttp.ClientSession) -> None:
    (emu.root / "x").write_bytes(b"blocker")  # x/y cannot be written while x is an object
    upload = await start(http, emu, "x/y")
    etag = await part(http, emu, "x/y", upload, 1, b"precious")
    assert (await complete(http, emu, "x/y", upload, [(1, etag)]))[:2] == (
        400,
        "InvalidArgument",
    )
    (emu.root / "x").unlink()
    status, _, _ = await complete(http, emu, "x/y", upload, [(1, etag)])
    assert status == 200  # was 404 NoSuchUpload, the parts gone
    assert (emu.root / "x" / "y").read_bytes() == b"precious"


async def test_a_repeated_complete_answers_as_the_first(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    upload = await start(http, emu, "t")
    parts = [(1, await part(http, emu, "t", upload, 1, b"abc"))]
    first = await complete(http, emu, "t", upload, parts)
    assert first[0] == 200
    assert await complete(http, emu, "t", upload, parts) == first  # was 404 NoSuchUpload
    status, code, _ = await complete(http, emu, "other", upload, parts)
    assert (status, code) == (404, "NoSuchUpload")  # the id names another key's upload
    assert not list((emu.root / ".aiozarr-emulator-tmp").iterdir())  # no part left


@pytest.mark.parametrize(
    ("listed", "code"),
    [
        ("stale", "InvalidPart"),
        ("wrong", "InvalidPart"),
        ("missing", "InvalidPart"),
        ("descending", "InvalidPartOrder"),
        ("twice", "InvalidPartOrder"),
        ("none", "MalformedXML"),
        ("small", "EntityTooSmall"),
    ],
)
async def test_a_complete_with_a_bad_part_list_is_refused(
    emu: Emulator, http: aiohttp.ClientSession, listed: str, code: str
) -> None:
    (emu.root / "m").write_bytes(b"OLD")
    upload = await start(http, emu, "m")
    stale = await part(http, emu, "m", upload, 1, BIG)
    one = await part(http, emu, "m", upload, 1, BIG)  # uploaded again: a new ETag
    two = await part(http, emu, "m", upload, 2, b"tail")
    small = await part(http, emu, "m", upload, 3, b"small")
    parts = {
        "stale": [(1, stale), (2, two)],
        "wrong": [(1, '"0123"'), (2, two)],
        "missing": [(1, one), (4, two)],
        "descending": [(2, two), (1, one)],
        "twice": [(1, one), (1, one), (2, two)],
        "none": [],
        "small": [(1, one), (2, two), (3, small)],  # part 2 (4 bytes) is not the last
    }[listed]
    assert (await complete(http, emu, "m", upload, parts))[:2] == (400, code)  # was 200
    assert (emu.root / "m").read_bytes() == b"OLD"
    status, _, etag = await complete(http, emu, "m", upload, [(1, one), (2, two)])
    assert status == 200, "the upload is still there to complete"
    assert (emu.root / "m").read_bytes() == BIG + b"tail"
    assert etag


async def test_abort_of_an_unknown_upload_is_404(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    status, code, _, _ = await call(http, "DELETE", emu.http_url("k") + "?uploadId=nope")
    assert (status, code) == (404, "NoSuchUpload")  # was 204
    upload = await start(http, emu, "k")
    assert (await call(http, "DELETE", emu.http_url("k") + f"?uploadId={upload}"))[0] == 204
