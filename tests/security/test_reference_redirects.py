"""A reference file's targets cannot lead elsewhere through a redirect or an encoding.

- An http(s) target (or the reference file itself) answered with a redirect is followed
  only to a location the reference file may read; any other raises
  `ReferenceTargetError` naming it, and nothing is sent there.
- A followed redirect to another scheme, host or port carries none of the caller's
  options (headers), not only `Authorization`.
- The URL read is the URL checked: a target whose path a server could read as another
  one (`..%2F`, `%2e%2e`, a backslash, `?`, `#`) is refused before any request.

Two plain HTTP servers on 127.0.0.1 play the parts: A serves the reference file and
answers redirects, B records whether it was reached and with which headers.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import pytest
from aiohttp import web
from tests.servers import in_background, serving

import aiozarr
from aiozarr.errors import ReferenceTargetError, StoreError
from aiozarr.storage.references.reference_store import ReferenceStore

DATA = bytes(range(16))
SECRET = b"internal secret"
KEY_HEADERS = {"client_options": {"default_headers": {"X-Api-Key": "the-key"}}}


class _Server:
    """Files of `root` (ranges too), redirects from `redirects` (path -> Location), each
    request's raw path and headers kept. Like a lax server, it decodes the path before
    resolving `..`, so `/public/..%2Fprivate/x` serves `/private/x`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.redirects: dict[str, str] = {}
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.raw_path, dict(request.headers)))
        path = posixpath.normpath(unquote(request.raw_path.split("?", 1)[0]))
        if path in self.redirects:
            raise web.HTTPFound(self.redirects[path])
        file = self.root / path.lstrip("/")
        if not file.is_file():
            raise web.HTTPNotFound()
        return web.FileResponse(file)

    def put(self, path: str, data: bytes) -> None:
        file = self.root / path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)

    def paths(self) -> list[str]:
        return [path for path, _ in self.seen]


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[_Server, _Server]]:
    a, b = pair = (_Server(tmp_path / "a"), _Server(tmp_path / "b"))
    with in_background(serving(a.handle)) as a.url, in_background(serving(b.handle)) as b.url:
        yield pair


def _refs(entries: dict[str, Any]) -> dict[str, Any]:
    zarray = {
        "zarr_format": 2,
        "shape": [len(DATA)],
        "chunks": [len(DATA)],
        "dtype": "|u1",
        "compressor": None,
        "fill_value": 0,
        "filters": None,
        "order": "C",
    }
    return {
        "version": 1,
        "refs": {".zgroup": '{"zarr_format": 2}', **entries, "a/.zarray": json.dumps(zarray)},
    }


# -- redirects --------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [["data.bin"], ["data.bin", 0, 16]])
async def test_a_redirect_out_of_the_allowed_targets_reaches_nothing(
    servers: tuple[_Server, _Server], entry: list[Any]
) -> None:
    a, b = servers
    b.put("/internal-secret", SECRET)
    a.put("/d/refs.json", json.dumps(_refs({"a/0": entry})).encode())
    a.redirects["/d/data.bin"] = f"{b.url}/internal-secret"
    store = ReferenceStore(f"{a.url}/d/refs.json", storage_options=KEY_HEADERS)
    with pytest.raises(ReferenceTargetError, match=re.escape(f"{b.url}/internal-secret")):
        await store.get("a/0")
    arr = await aiozarr.open_array_async(store, "a", mode="r")
    with pytest.raises(ReferenceTargetError, match="redirected to"):
        await arr.getitem(...)
    assert b.seen == []
    assert "/d/data.bin" in a.paths()


async def test_a_redirected_reference_file_reaches_nothing(
    servers: tuple[_Server, _Server],
) -> None:
    a, b = servers
    b.put("/refs.json", json.dumps({"version": 1, "refs": {"secret": "inline"}}).encode())
    a.redirects["/d/refs.json"] = f"{b.url}/refs.json"
    store = ReferenceStore(f"{a.url}/d/refs.json", storage_options=KEY_HEADERS)
    with pytest.raises(ReferenceTargetError, match=re.escape(f"{b.url}/refs.json")):
        await store.get("secret")
    assert b.seen == []


async def test_a_redirect_to_an_allowed_target_is_followed_without_the_options(
    servers: tuple[_Server, _Server],
) -> None:
    a, b = servers
    a.put("/moved/data.bin", DATA)
    b.put("/mirror/data.bin", DATA[::-1])
    a.put(
        "/d/refs.json", json.dumps(_refs({"own": ["data.bin"], "a/0": ["far.bin", 2, 4]})).encode()
    )
    a.redirects["/d/data.bin"] = "/moved/data.bin"  # the same host: its options go along
    a.redirects["/d/far.bin"] = f"{b.url}/mirror/data.bin"
    store = ReferenceStore(
        f"{a.url}/d/refs.json",
        storage_options=KEY_HEADERS,
        allowed_targets=[f"{b.url}/mirror/"],
    )
    assert bytes(await store.get("own")) == DATA
    assert bytes(await store.get("a/0")) == DATA[::-1][2:6]
    assert all(headers.get("X-Api-Key") == "the-key" for _, headers in a.seen)
    assert b.paths() == ["/mirror/data.bin"]
    assert "X-Api-Key" not in b.seen[0][1] and "Authorization" not in b.seen[0][1]
    assert b.seen[0][1]["Range"] == "bytes=2-5"

    # Allowed on B, but not where this one leads.
    a.redirects["/d/far.bin"] = f"{b.url}/private/data.bin"
    store = ReferenceStore(f"{a.url}/d/refs.json", allowed_targets=[f"{b.url}/mirror/"])
    with pytest.raises(ReferenceTargetError, match=re.escape(f"{b.url}/private/data.bin")):
        await store.get("a/0")
    assert b.paths() == ["/mirror/data.bin"]


async def test_a_redirect_loop_ends(servers: tuple[_Server, _Server]) -> None:
    a, _ = servers
    a.put("/d/refs.json", json.dumps(_refs({"a/0": ["loop.bin"]})).encode())
    a.redirects["/d/loop.bin"] = "/d/loop.bin"
    with pytest.raises(StoreError, match="redirects"):
        await ReferenceStore(f"{a.url}/d/refs.json").get("a/0")


# -- what is checked is what is read ------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/public/..%2Fprivate%2Fsecret",
        "/public/..%2fprivate/secret",
        "/public/%2e%2e/private/secret",
        "/public/%2E%2E%2Fprivate/secret",
        "/public/..%5Cprivate%5Csecret",
        "/public/..\\private\\secret",
        "/public/a?/../../private/secret",
        "/public/a#/../../private/secret",
    ],
)
async def test_a_target_a_server_could_read_as_another_path_is_refused(
    servers: tuple[_Server, _Server], path: str
) -> None:
    a, _ = servers
    a.put("/public/a", DATA)
    a.put("/private/secret", SECRET)
    allowed = [f"{a.url}/public/"]
    with pytest.raises(ReferenceTargetError, match="refused"):
        store = ReferenceStore(_refs({"a/0": [f"{a.url}{path}"]}), allowed_targets=allowed)
        await store.get("a/0")
    a.put("/d/refs.json", json.dumps(_refs({"a/0": [".." + path]})).encode())
    with pytest.raises(ReferenceTargetError, match="refused"):
        await ReferenceStore(f"{a.url}/d/refs.json", allowed_targets=allowed).get("a/0")
    assert a.paths() == ["/d/refs.json"]  # the reference file, nothing else


def test_a_plain_target_reads_as_checked(servers: tuple[_Server, _Server]) -> None:
    a, _ = servers
    a.put("/public/sub/data 1.bin", DATA)
    target = f"{a.url}/public/x/../sub/data%201.bin"
    group = aiozarr.open_group(
        _refs({"a/0": [target]}),
        mode="r",
        storage_options={"allowed_targets": [f"{a.url}/public/"]},
    )
    np.testing.assert_array_equal(group["a"][...], np.frombuffer(DATA, "u1"))
    assert a.paths() == ["/public/sub/data%201.bin"]


async def test_a_reference_file_at_a_hosts_root_reads_targets_beside_it(
    servers: tuple[_Server, _Server],
) -> None:
    a, _ = servers
    a.put("/data.bin", DATA)
    a.put("/refs.json", json.dumps(_refs({"a/0": ["data.bin", 1, 2]})).encode())
    assert bytes(await ReferenceStore(f"{a.url}/refs.json").get("a/0")) == DATA[1:3]
    assert a.paths() == ["/refs.json", "/data.bin"]


async def test_a_client_option_the_checked_client_cannot_honour_is_refused(
    servers: tuple[_Server, _Server],
) -> None:
    a, _ = servers
    a.put("/d/refs.json", json.dumps(_refs({"a/0": ["data.bin"]})).encode())
    options = {"client_options": {"proxy_excludes": "127.0.0.1"}}
    with pytest.raises(StoreError, match="proxy_excludes"):
        await ReferenceStore(f"{a.url}/d/refs.json", storage_options=options).get("a/0")
    assert a.seen == []
