"""`aiozarr serve` answers only the S3 operations it implements, and says why it refuses.

- Any other S3 operation (CopyObject's `x-amz-copy-source`, `?tagging`, `?acl`,
  `?versionId`, a bucket's `?versioning`, DeleteBucket ...) is answered
  `501 NotImplemented` and changes nothing: a CopyObject was answered 200 with an empty
  object written in place of the copy.
- A write to a read-only server fails with the server's own reason ("the server is
  read-only ... (--allow-writes)"), not advice to give AWS credentials.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import aiohttp
import pytest

from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage import from_url

SOURCE = b"the source object"


def _code(body: bytes) -> str:
    return ElementTree.fromstring(body).findtext("Code") or ""


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("PUT", "copy", {"x-amz-copy-source": "/{bucket}/source"}),  # CopyObject
        ("PUT", "copy?partNumber=1&uploadId=x", {"x-amz-copy-source": "/{bucket}/source"}),
        ("PUT", "source?tagging", {}),
        ("PUT", "source?acl", {}),
        ("GET", "source?tagging", {}),
        ("GET", "source?acl", {}),
        ("GET", "source?versionId=3", {}),
        ("GET", "source?partNumber=1", {}),
        ("HEAD", "source?versionId=3", {}),
        ("POST", "source?restore", {}),
        ("POST", "source?select&select-type=2", {}),
        ("DELETE", "source?tagging", {}),
        ("GET", "?versioning", {}),
        ("GET", "?uploads", {}),
        ("GET", "?location", {}),
        ("PUT", "?versioning", {}),
        ("DELETE", "", {}),
        ("PATCH", "source", {}),
    ],
)
async def test_an_operation_it_does_not_implement_is_501_and_changes_nothing(
    tmp_path: Path, method: str, path: str, headers: dict[str, str]
) -> None:
    (tmp_path / "source").write_bytes(SOURCE)
    async with Emulator(tmp_path, read_only=False) as emu, aiohttp.ClientSession() as http:
        sent = {name: value.format(bucket=emu.bucket) for name, value in headers.items()}
        url = f"{emu.endpoint}/{emu.bucket}/{path}"
        async with http.request(method, url, headers=sent, data=b"<x/>") as answer:
            status, body = answer.status, await answer.read()
    assert status == 501, body
    if method != "HEAD":
        assert _code(body) == "NotImplemented"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["source"]
    assert (tmp_path / "source").read_bytes() == SOURCE


async def test_the_operations_it_implements_still_answer(tmp_path: Path) -> None:
    (tmp_path / "source").write_bytes(SOURCE)
    async with Emulator(tmp_path, read_only=False) as emu, aiohttp.ClientSession() as http:
        base = f"{emu.endpoint}/{emu.bucket}"
        for method, path, want in [
            ("GET", "source?x-id=GetObject", 200),  # what AWS SDKs add
            ("GET", "source?v=2", 200),  # a plain HTTP reader's cache buster
            ("HEAD", "source", 200),
            ("PUT", "put?x-id=PutObject", 200),
            ("GET", "?list-type=2&prefix=s&max-keys=5", 200),
            ("DELETE", "put", 204),
        ]:
            async with http.request(method, f"{base}/{path}", data=b"x") as answer:
                assert answer.status == want, (method, path, await answer.read())


async def test_a_write_to_a_read_only_server_says_the_servers_reason(tmp_path: Path) -> None:
    async with Emulator(tmp_path, read_only=True) as emu:
        options = {**emu.storage_options(), "anon": True}
        store = from_url(emu.s3_url("data.zarr"), storage_options=options)
        with pytest.raises(StoreError) as caught:
            await store.set("zarr.json", b"{}")
    message = str(caught.value)
    assert "the server is read-only; cannot write 'data.zarr/zarr.json' (--allow-writes)" in message
    assert "403 Forbidden" in message
    assert "Give credentials" not in message and "AWS_PROFILE" not in message
    assert not (tmp_path / "data.zarr").exists()
