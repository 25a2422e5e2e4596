"""A GET's and HEAD's conditional headers as RFC 9110 orders them and S3 answers them:
`If-Range` that names another version drops the range, 304s for HEAD and
`If-Modified-Since` carry the version's headers, `If-Match` takes a list, and the
conditions come before the range."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from email.utils import formatdate
from pathlib import Path

import aiohttp
import pytest
from multidict import CIMultiDict

from aiozarr.emulator import Emulator

OLD, NEW = bytes(range(100)), bytes(range(100, 200))


@pytest.fixture
async def emu(tmp_path: Path) -> AsyncIterator[Emulator]:
    (tmp_path / "k").write_bytes(OLD)
    os.utime(tmp_path / "k", (1_000_000_000, 1_000_000_000))
    async with Emulator(tmp_path) as emu:
        yield emu


async def get(
    emu: Emulator, method: str = "GET", **headers: str
) -> tuple[int, CIMultiDict[str], bytes]:
    headers = {name.replace("_", "-"): value for name, value in headers.items()}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, emu.http_url("k"), headers=headers) as resp,
    ):
        return resp.status, CIMultiDict(resp.headers), await resp.read()


async def test_if_range_naming_an_old_version_serves_the_whole_new_one(emu: Emulator) -> None:
    _, first, _ = await get(emu)
    etag, modified = first["ETag"], first["Last-Modified"]
    status, headers, body = await get(emu, Range="bytes=50-", If_Range=etag)
    assert (status, body, headers["Content-Range"]) == (206, OLD[50:], "bytes 50-99/100")
    assert (await get(emu, Range="bytes=50-", If_Range=modified))[::2] == (206, OLD[50:])
    (emu.root / "new").write_bytes(NEW)
    os.replace(emu.root / "new", emu.root / "k")
    for validator in (etag, modified, "W/" + etag):
        status, headers, body = await get(emu, Range="bytes=50-", If_Range=validator)
        assert (status, body) == (200, NEW)  # was 206 with the new version's bytes 50-
        assert "Content-Range" not in headers
    status, headers, body = await get(emu, Range="bytes=50-", If_Range=headers["ETag"])
    assert (status, body) == (206, NEW[50:])


async def test_not_modified_answers_for_head_and_dates(emu: Emulator) -> None:
    _, first, _ = await get(emu)
    later = formatdate(1_000_000_100, usegmt=True)
    earlier = formatdate(999_999_000, usegmt=True)
    for method, headers in [
        ("HEAD", {"If_None_Match": first["ETag"]}),  # was 200
        ("GET", {"If_Modified_Since": later}),  # was 200
        ("HEAD", {"If_Modified_Since": first["Last-Modified"]}),
        # If-None-Match decides alone where it is given (RFC 9110 13.1.4):
        ("GET", {"If_None_Match": first["ETag"], "If_Modified_Since": earlier}),
        # conditions before the range: a range past the end is no 416 here
        ("GET", {"If_None_Match": first["ETag"], "Range": "bytes=500-"}),
    ]:
        status, answer, body = await get(emu, method, **headers)
        assert (status, body) == (304, b""), (method, headers)
        assert (answer["ETag"], answer["Last-Modified"]) == (first["ETag"], first["Last-Modified"])
    status, _, body = await get(emu, If_Modified_Since=earlier)
    assert (status, body) == (200, OLD)
    assert (await get(emu, If_None_Match='"other"', If_Modified_Since=later))[0] == 200


async def test_if_match_takes_a_list_and_a_star(emu: Emulator) -> None:
    etag = (await get(emu, "HEAD"))[1]["ETag"]
    assert (await get(emu, If_Match=f'"other", {etag}'))[::2] == (200, OLD)  # was 412
    assert (await get(emu, If_Match="*"))[0] == 200  # was 412
    assert (await get(emu, If_Match='"a", "b"'))[0] == 412
    assert (await get(emu, If_Match="W/" + etag))[0] == 412  # compared strongly
    # 412 before the range: a range past the end is no 416 here
    assert (await get(emu, If_Match='"other"', Range="bytes=500-"))[0] == 412
