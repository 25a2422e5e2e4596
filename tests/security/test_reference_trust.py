"""Reference files (kerchunk) are untrusted: what they may read, and with whose options.

- A reference file reads targets in its own bucket or host (a local one: its own folder),
  and under the prefixes the caller allows; anything else (`file:///etc/...`, `../`, an
  internal HTTP service, another bucket) raises `ReferenceTargetError` naming the target
  and how to allow it, before any request is sent to it.
- Tricks do not pass: a user in the host part, encoded `..`, a climb above a bucket's
  root, a bucket whose name starts like an allowed one.
- The caller's options (headers, keys) go only to the reference file's own location, and
  elsewhere only where the caller gave them for.
- A whole-value bound is checked before a target's bytes are read.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from tests.servers import in_background, serving

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import ReferenceTargetError, ValueTooLargeError
from aiozarr.storage import LocalStore
from aiozarr.storage.references.reference_store import ReferenceStore

SECRET = b"root:x:0:0:the secret"
DATA = bytes(range(16))


def _zarray(n: int) -> str:
    return json.dumps(
        {
            "zarr_format": 2,
            "shape": [n],
            "chunks": [n],
            "dtype": "|u1",
            "compressor": None,
            "fill_value": 0,
            "filters": None,
            "order": "C",
        }
    )


def _refs(entries: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "refs": {".zgroup": '{"zarr_format": 2}', **entries}}


def _put(emulator: Emulator, key: str, data: bytes) -> None:
    path = emulator.root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _prefix() -> str:
    return f"refs-{uuid.uuid4().hex[:10]}"


class _Recorder:
    """A plain HTTP server on 127.0.0.1 serving files of `root` (ranges too) and keeping
    each request's path and Authorization header."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: list[tuple[str, str | None]] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.path, request.headers.get("Authorization")))
        path = self.root / request.path.lstrip("/")
        if not path.is_file():
            raise web.HTTPNotFound()
        return web.FileResponse(path)


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[_Recorder]:
    root = tmp_path / "recorder"
    root.mkdir()
    server = _Recorder(root)
    with in_background(serving(server.handle)) as url:
        server.url = url
        yield server


# -- what a reference file may read ---------------------------------------------------------


@pytest.mark.parametrize("transport", ["s3", "http"])
@pytest.mark.parametrize("form", ["file-url", "absolute-path", "whole-file"])
async def test_a_remote_reference_file_reads_no_local_file(
    emulator: Emulator, tmp_path: Path, transport: str, form: str
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    target = {
        "file-url": [f"file://{secret}", 0, len(SECRET)],
        "absolute-path": [str(secret), 0, len(SECRET)],
        "whole-file": [f"file://{secret}"],
    }[form]
    prefix = _prefix()
    _put(emulator, f"{prefix}/refs.json", json.dumps(_refs({"k": target})).encode())
    if transport == "s3":
        store = ReferenceStore(
            emulator.s3_url(f"{prefix}/refs.json"), storage_options=emulator.storage_options()
        )
    else:
        store = ReferenceStore(emulator.http_url(f"{prefix}/refs.json"))
    with pytest.raises(ReferenceTargetError, match=re.escape(str(secret))) as caught:
        await store.get("k")
    assert "allowed_targets" in str(caught.value)


async def test_a_local_reference_file_reads_its_own_folder_only(tmp_path: Path) -> None:
    folder = tmp_path / "refs"
    (folder / "sub").mkdir(parents=True)
    (folder / "data.bin").write_bytes(DATA)
    (folder / "sub" / "more.bin").write_bytes(DATA[::-1])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (folder / "link").symlink_to(outside)  # a link inside the folder that leads out of it
    fine = {
        "a": ["data.bin", 4, 4],
        "b": [str(folder / "data.bin")],
        "c": [f"file://{folder}/sub/more.bin", 0, 2],
        "d": ["sub/../data.bin", 2, 2],
        "e": "base64:" + base64.b64encode(b"inline").decode(),
    }
    path = folder / "refs.json"
    path.write_text(json.dumps(_refs(fine)))
    store = ReferenceStore(path)
    got = [await store.get(k) for k in "abcde"]
    assert [bytes(g) for g in got] == [DATA[4:8], DATA, DATA[::-1][:2], DATA[2:4], b"inline"]

    for target in (
        "../outside/secret.txt",
        str(outside / "secret.txt"),
        f"file://{outside}/secret.txt",
        "link/secret.txt",
        "sub/../../outside/secret.txt",
    ):
        path.write_text(json.dumps(_refs({**fine, "x": [target]})))
        with pytest.raises(ReferenceTargetError, match=re.escape(str(outside))):
            await ReferenceStore(path).get("a")  # refused when the file is loaded
        allowed = ReferenceStore(path, allowed_targets=[str(outside)])
        assert bytes(await allowed.get("x")) == SECRET


async def test_a_reference_file_reaches_no_other_host_or_scheme(
    emulator: Emulator, recorder: _Recorder
) -> None:
    prefix = _prefix()
    _put(emulator, f"{prefix}/internal.bin", SECRET)
    (recorder.root / "internal.bin").write_bytes(SECRET)
    cases = [  # (where the reference file is read from, a target elsewhere)
        ("s3", emulator.http_url(f"{prefix}/internal.bin")),  # same server, another scheme
        ("http", f"{recorder.url}/internal.bin"),  # 127.0.0.1, another port
        ("s3", f"s3://{emulator.bucket}-private/{prefix}/internal.bin"),  # another bucket
    ]
    for transport, target in cases:
        _put(emulator, f"{prefix}/refs.json", json.dumps(_refs({"k": [target]})).encode())
        if transport == "s3":
            url, options = emulator.s3_url(f"{prefix}/refs.json"), emulator.storage_options()
        else:
            url, options = emulator.http_url(f"{prefix}/refs.json"), None
        emulator.reset_stats()
        store = ReferenceStore(url, storage_options=options)
        with pytest.raises(ReferenceTargetError, match=re.escape(target)):
            await store.get("k")
        assert emulator.stats()["by_method"] == {"GET": 1}, target  # the reference file
    assert recorder.seen == []


def test_a_refused_target_fails_the_open_without_a_request_to_it(emulator: Emulator) -> None:
    prefix = _prefix()
    _put(emulator, f"{prefix}/internal.bin", DATA)
    target = emulator.http_url(f"{prefix}/internal.bin")
    refs = _refs({"a/.zarray": _zarray(len(DATA)), "a/0": [target]})
    _put(emulator, f"{prefix}/refs.json", json.dumps(refs).encode())
    url = emulator.s3_url(f"{prefix}/refs.json")
    emulator.reset_stats()
    with pytest.raises(ReferenceTargetError, match=re.escape(target)):
        aiozarr.open_group(url, mode="r", storage_options=emulator.storage_options())
    assert emulator.stats()["by_method"] == {"GET": 1}  # the reference file, nothing else
    # Allowed through open_*'s storage_options, as the xarray backend passes them.
    options = {**emulator.storage_options(), "allowed_targets": [emulator.endpoint]}
    group = aiozarr.open_group(url, mode="r", storage_options=options)
    np.testing.assert_array_equal(group["a"][...], np.frombuffer(DATA, "u1"))


def test_the_xarray_backend_passes_allowed_targets(emulator: Emulator) -> None:
    xr = pytest.importorskip("xarray")
    prefix = _prefix()
    _put(emulator, f"{prefix}/internal.bin", DATA)
    refs = _refs(
        {
            "a/.zarray": _zarray(len(DATA)),
            "a/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]}),
            "a/0": [emulator.http_url(f"{prefix}/internal.bin")],
        }
    )
    _put(emulator, f"{prefix}/refs.json", json.dumps(refs).encode())
    url = emulator.s3_url(f"{prefix}/refs.json")
    with pytest.raises(ReferenceTargetError):
        xr.open_dataset(
            url, engine="aiozarr", storage_options=emulator.storage_options(), consolidated=False
        )
    options = {**emulator.storage_options(), "allowed_targets": [emulator.http_url(prefix)]}
    ds = xr.open_dataset(
        url, engine="aiozarr", storage_options=options, mask_and_scale=False, consolidated=False
    )
    np.testing.assert_array_equal(ds["a"].values, np.frombuffer(DATA, "u1"))


def test_a_references_dict_reads_inline_values_and_targets_it_is_allowed(
    emulator: Emulator,
) -> None:
    prefix = _prefix()
    _put(emulator, f"{prefix}/data.bin", DATA)
    inline = {"a/.zarray": _zarray(4), "a/0": "base64:" + base64.b64encode(b"\1\2\3\4").decode()}
    group = aiozarr.open_group(_refs(inline), mode="r")  # inline values need no target
    np.testing.assert_array_equal(group["a"][...], [1, 2, 3, 4])

    refs = _refs(
        {**inline, "b/.zarray": _zarray(16), "b/0": [emulator.s3_url(f"{prefix}/data.bin")]}
    )
    with pytest.raises(ReferenceTargetError, match=re.escape("allowed_targets=['s3://bucket/']")):
        aiozarr.open_group(refs, mode="r", storage_options=emulator.storage_options())
    options = {**emulator.storage_options(), "allowed_targets": [emulator.s3_url(prefix)]}
    group = aiozarr.open_group(refs, mode="r", storage_options=options)
    np.testing.assert_array_equal(group["b"][...], np.frombuffer(DATA, "u1"))


@pytest.mark.parametrize(
    ("target", "allowed"),
    [
        # a user in the host part: the request would go to the host after the "@"
        ("http://127.0.0.1:1@127.0.0.1:{port}/bucket/{prefix}/data.bin", "http://127.0.0.1:1/"),
        ("http://127.0.0.1:1\\@127.0.0.1:{port}/bucket/{prefix}/data.bin", "http://127.0.0.1:1/"),
        # a bucket whose name starts like the allowed one's
        ("s3://bucket-evil/{prefix}/data.bin", "s3://bucket"),
        # a climb out of the allowed folder, plain, above the root, and percent-encoded
        ("s3://bucket/{prefix}/../other/data.bin", "s3://bucket/{prefix}"),
        ("s3://bucket/{prefix}/../../../data.bin", "s3://bucket/{prefix}"),
        ("s3://bucket/{prefix}/%2e%2e/other/data.bin", "s3://bucket/{prefix}"),
        ("s3://bucket/{prefix}x/data.bin", "s3://bucket/{prefix}"),
        # a NUL, which no path holds (the OS refused it with a bare ValueError)
        ("/tmp/{prefix}/data.bin\x00", "/tmp/{prefix}"),
    ],
)
def test_tricks_in_a_target_do_not_pass(emulator: Emulator, target: str, allowed: str) -> None:
    prefix = _prefix()
    _put(emulator, f"{prefix}/data.bin", DATA)
    _put(emulator, f"{prefix}x/data.bin", DATA)
    _put(emulator, "other/data.bin", DATA)
    target = target.format(port=emulator.port, prefix=prefix)
    refs = _refs({"k": [target]})
    emulator.reset_stats()
    with pytest.raises(ReferenceTargetError):
        ReferenceStore(
            refs,
            allowed_targets=[allowed.format(prefix=prefix)],
            target_options=emulator.storage_options(),
        )
    assert emulator.stats()["requests"] == 0


async def test_targets_are_read_as_normalised(emulator: Emulator, tmp_path: Path) -> None:
    prefix = _prefix()
    _put(emulator, f"{prefix}/data.bin", DATA)
    for target in (
        f"s3://bucket/{prefix}/sub/../data.bin",
        f"S3A://bucket/{prefix}/./data.bin",
    ):
        store = ReferenceStore(
            _refs({"k": [target, 1, 3]}),
            allowed_targets=[f"s3://bucket/{prefix}/"],
            target_options=emulator.storage_options(),
        )
        assert bytes(await store.get("k")) == DATA[1:4]
    nc = tmp_path / "data" / "nc"
    nc.mkdir(parents=True)
    (nc / "x.nc").write_bytes(DATA)
    (tmp_path / "data" / "ncx").mkdir()
    (tmp_path / "data" / "ncx" / "x.nc").write_bytes(SECRET)
    store = ReferenceStore(_refs({"k": [str(nc / "x.nc")]}), allowed_targets=str(nc) + "/")
    assert bytes(await store.get("k")) == DATA
    with pytest.raises(ReferenceTargetError):
        ReferenceStore(
            _refs({"k": [str(tmp_path / "data" / "ncx" / "x.nc")]}), allowed_targets=str(nc)
        )


# -- whose options go where -----------------------------------------------------------------


def _headers(value: str) -> dict[str, Any]:
    return {"client_options": {"default_headers": {"Authorization": value}}}


async def test_options_go_only_where_the_caller_gave_them(
    emulator: Emulator, recorder: _Recorder
) -> None:
    prefix = _prefix()
    _put(emulator, f"{prefix}/data.bin", DATA)
    (recorder.root / "data.bin").write_bytes(DATA[::-1])
    refs = _refs({"own": ["data.bin", 0, 4], "other": [f"{recorder.url}/data.bin", 0, 4]})
    _put(emulator, f"{prefix}/refs.json", json.dumps(refs).encode())
    url = emulator.http_url(f"{prefix}/refs.json")

    store = ReferenceStore(
        url,
        storage_options=_headers("Bearer for-the-reference-file"),
        allowed_targets=[recorder.url],
    )
    assert bytes(await store.get("own")) == DATA[:4]  # its own host: its options
    assert bytes(await store.get("other")) == DATA[::-1][:4]
    assert recorder.seen == [("/data.bin", None)]  # another host: none of them

    recorder.seen.clear()
    store = ReferenceStore(
        url,
        storage_options=_headers("Bearer for-the-reference-file"),
        allowed_targets=[recorder.url],
        target_options={f"{recorder.url}/": _headers("Bearer for-the-recorder")},
    )
    assert bytes(await store.get("other")) == DATA[::-1][:4]
    assert recorder.seen == [("/data.bin", "Bearer for-the-recorder")]


# -- bounds ---------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [["big.bin"], ["big.bin", 0, 4 << 20]])
async def test_a_target_larger_than_its_chunk_is_refused_unread(
    tmp_path: Path, entry: list[Any]
) -> None:
    folder = tmp_path / "refs"
    folder.mkdir()
    (folder / "big.bin").write_bytes(b"\1" * (4 << 20))  # 4 MiB for a 16-byte chunk
    (folder / "refs.json").write_text(json.dumps(_refs({"a/.zarray": _zarray(16), "a/0": entry})))
    target = LocalStore(folder, read_only=True)  # shares its counters with the store read
    target.reset_stats()
    arr = await aiozarr.open_array_async(ReferenceStore(folder / "refs.json"), "a", mode="r")
    with pytest.raises(ValueTooLargeError, match="a/0"):
        await arr.getitem(...)
    store = ReferenceStore(folder / "refs.json")
    with pytest.raises(ValueTooLargeError, match="a/0"):
        await store.get_versioned("a/0", max_bytes=16)
    assert target.stats()["bytes_read"] < 1 << 20, target.stats()
