"""An upload that is not what its client sent is refused and the object it was to
replace stays: an `aws-chunked` body cut short, even where the HTTP body is whole by its
`Content-Length` (what counts is the framing, a final 0-byte chunk, and the
`x-amz-decoded-content-length` it declared), and a payload that differs from the digest
it declares (`Content-MD5`, `x-amz-checksum-*`)."""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from xml.etree import ElementTree

import aiohttp
import pytest

from aiozarr.emulator import Emulator
from aiozarr.emulator.paths import TMP_DIR

SIG = b";chunk-signature=" + b"0" * 64
STREAMING = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"


@pytest.fixture
async def emu(tmp_path: Path) -> AsyncIterator[Emulator]:
    (tmp_path / "k").write_bytes(b"OLD")
    async with Emulator(tmp_path) as emu:
        yield emu


async def put(emu: Emulator, body: bytes, decoded: int | None) -> tuple[int, str]:
    headers = {"x-amz-content-sha256": STREAMING, "Content-Encoding": "aws-chunked"}
    if decoded is not None:
        headers["x-amz-decoded-content-length"] = str(decoded)
    async with (
        aiohttp.ClientSession() as http,
        http.put(emu.http_url("k"), data=body, headers=headers) as resp,
    ):
        text = await resp.read()
        code = ElementTree.fromstring(text).findtext("Code") if text else ""
        return resp.status, code or ""


@pytest.mark.parametrize(
    ("body", "decoded"),
    [
        (b"5" + SIG + b"\r\nHELLO\r\n", 100),  # no final chunk
        (b"5" + SIG + b"\r\nHELLO\r\n", None),  # no final chunk, no declared length
        (b"10" + SIG + b"\r\nHELLO", 16),  # a chunk of 16 bytes that carries 5
        (b"5" + SIG + b"\r\nHELLO\r\n0" + SIG + b"\r\n\r\n", 9),  # whole, but not 9 bytes
    ],
    ids=["no-final-chunk", "no-final-chunk-no-length", "cut-in-a-chunk", "length-differs"],
)
async def test_a_cut_short_aws_chunked_body_is_refused(
    emu: Emulator, body: bytes, decoded: int | None
) -> None:
    assert await put(emu, body, decoded) == (400, "IncompleteBody")  # was 200
    assert (emu.root / "k").read_bytes() == b"OLD"
    tmp = emu.root / TMP_DIR
    assert not tmp.exists() or not any(tmp.iterdir())  # no temp file left behind


async def test_a_whole_aws_chunked_body_is_stored(emu: Emulator) -> None:
    body = b"5" + SIG + b"\r\nHELLO\r\n0" + SIG + b"\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"
    assert await put(emu, body, 5) == (200, "")
    assert (emu.root / "k").read_bytes() == b"HELLO"


def _digests(data: bytes) -> dict[str, str]:
    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return {
        "Content-MD5": b64(hashlib.md5(data, usedforsecurity=False).digest()),
        "x-amz-checksum-crc32": b64(zlib.crc32(data).to_bytes(4, "big")),
        "x-amz-checksum-sha1": b64(hashlib.sha1(data).digest()),
        "x-amz-checksum-sha256": b64(hashlib.sha256(data).digest()),
    }


@pytest.mark.parametrize("header", list(_digests(b"")))
@pytest.mark.parametrize("size", [5, 3 << 20], ids=["small", "spilled"])
async def test_a_payload_that_differs_from_its_digest_is_refused(
    emu: Emulator, header: str, size: int
) -> None:
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    async with aiohttp.ClientSession() as http:
        wrong = {header: _digests(payload + b"!")[header]}
        async with http.put(emu.http_url("k"), data=payload, headers=wrong) as resp:
            body = await resp.read()
            assert (resp.status, ElementTree.fromstring(body).findtext("Code")) == (
                400,
                "BadDigest",
            )  # was 200
        assert (emu.root / "k").read_bytes() == b"OLD"
        right = {header: _digests(payload)[header]}
        async with http.put(emu.http_url("k"), data=payload, headers=right) as resp:
            assert resp.status == 200
        assert (emu.root / "k").read_bytes() == payload
