"""What the served folder holds besides objects: named pipes, folders a delete emptied,
names the file system refuses. None of them blocks a thread, stands in the way of a
write or answers a 500."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import aiohttp
import numpy as np
import pytest
from multidict import CIMultiDict

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.emulator.paths import TMP_DIR
from aiozarr.storage.backends.object_store import ObjectStore

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@pytest.fixture
async def emu(tmp_path: Path) -> AsyncIterator[Emulator]:
    (tmp_path / "ok").write_bytes(b"fine")
    os.mkfifo(tmp_path / "pipe")
    async with Emulator(tmp_path) as emu:
        yield emu
    # Readers stuck in open() (the defect) are let go, and those still queued find a
    # plain file, so the test's loop can stop.
    writer = None
    with contextlib.suppress(OSError):
        writer = os.open(tmp_path / "pipe", os.O_WRONLY | os.O_NONBLOCK)
    (tmp_path / "plain").write_bytes(b"")
    os.replace(tmp_path / "plain", tmp_path / "pipe")
    if writer is not None:
        os.close(writer)


async def fetch(
    http: aiohttp.ClientSession, method: str, url: str, **kwargs: Any
) -> tuple[int, CIMultiDict[str], bytes]:
    async with http.request(method, url, **kwargs) as resp:
        return resp.status, CIMultiDict(resp.headers), await resp.read()


def error_code(body: bytes) -> str:
    return ElementTree.fromstring(body).findtext("Code") or ""


# -- named pipes -------------------------------------------------------------------------


async def test_a_named_pipe_is_no_object_and_blocks_nothing(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    # Opening a pipe for reading waits for a writer: each GET held a thread forever,
    # and a few dozen of them left the server answering nothing at all.
    answers = await asyncio.gather(
        *(fetch(http, method, emu.http_url("pipe")) for method in ["GET"] * 40 + ["HEAD"])
    )
    assert {status for status, _, _ in answers} == {404}
    assert error_code(answers[0][2]) == "NoSuchKey"
    assert (await fetch(http, "GET", emu.http_url("ok")))[::2] == (200, b"fine")
    status, _, body = await fetch(http, "GET", emu.http_url(""))
    keys = [k.text for k in ElementTree.fromstring(body).iter(f"{NS}Key")]
    assert (status, keys) == (200, ["ok"])


async def test_deleting_a_named_pipe_leaves_it(emu: Emulator, http: aiohttp.ClientSession) -> None:
    assert (await fetch(http, "DELETE", emu.http_url("pipe")))[0] == 204  # as for no key
    assert (emu.root / "pipe").is_fifo()
    status, _, body = await fetch(http, "DELETE", emu.http_url("pipe"), headers={"If-Match": "*"})
    assert (status, error_code(body)) == (404, "NoSuchKey")
    assert (emu.root / "pipe").is_fifo()


# -- folders a delete emptied ------------------------------------------------------------


async def test_a_deleted_keys_folder_does_not_block_an_object_of_its_name(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    assert (await fetch(http, "PUT", emu.http_url("a/c/0"), data=b"chunk"))[0] == 200
    assert (await fetch(http, "DELETE", emu.http_url("a/c/0")))[0] == 204
    assert not (emu.root / "a").exists()  # the folders it emptied went with it
    status, _, body = await fetch(http, "PUT", emu.http_url("a/c"), data=b"object")
    assert status == 200, body  # was 400: "both an object and a prefix"
    assert (await fetch(http, "GET", emu.http_url("a/c")))[::2] == (200, b"object")
    assert (emu.root / "ok").exists()  # the bucket's own folder stays


@pytest.mark.parametrize("how", ["DeleteObjects", "If-Match"])
async def test_every_delete_removes_the_folders_it_empties(
    emu: Emulator, http: aiohttp.ClientSession, how: str
) -> None:
    for key in ("d/e/f/1", "d/keep"):
        await fetch(http, "PUT", emu.http_url(key), data=b"x")
    if how == "DeleteObjects":
        xml = "<Delete><Object><Key>d/e/f/1</Key></Object></Delete>"
        assert (await fetch(http, "POST", emu.http_url("") + "?delete", data=xml))[0] == 200
    else:
        headers = {"If-Match": "*"}
        assert (await fetch(http, "DELETE", emu.http_url("d/e/f/1"), headers=headers))[0] == 204
    assert sorted(p.name for p in (emu.root / "d").iterdir()) == ["keep"]


async def test_a_folder_holding_no_file_is_no_object(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    (emu.root / "e" / "f" / "g").mkdir(parents=True)  # left by some other tool
    put = await fetch(http, "PUT", emu.http_url("e"), data=b"new", headers={"If-None-Match": "*"})
    assert put[0] == 200  # was 412: the empty folder taken for an object
    assert (emu.root / "e").read_bytes() == b"new"
    (emu.root / "h" / "i").mkdir(parents=True)
    (emu.root / "h" / "i" / "k").write_bytes(b"held")
    status, _, body = await fetch(http, "PUT", emu.http_url("h"), data=b"new")
    assert (status, error_code(body)) == (400, "InvalidArgument")  # a real prefix stays
    assert (emu.root / "h" / "i" / "k").read_bytes() == b"held"


def test_an_array_rewritten_with_fewer_dimensions_over_a_deleted_one(
    emulator_s3_store: Callable[..., ObjectStore],
) -> None:
    store = emulator_s3_store()
    old = aiozarr.create_array(store, "x", shape=(4, 4), chunks=(2, 2), dtype="i4")
    old[:] = np.arange(16, dtype="i4").reshape(4, 4)
    new = aiozarr.create_array(store, "x", shape=(4,), chunks=(2,), dtype="i4", overwrite=True)
    new[:] = np.arange(4, dtype="i4")  # c/0 where the old c/0/0 lay: was refused
    np.testing.assert_array_equal(aiozarr.open_array(store, "x")[:], np.arange(4))


# -- a PUT racing the delete that empties its folder ---------------------------------------

_race: dict[str, Any] = {"target": None, "then": None}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # The PUT opens its temp file (read-only: `args[1]` is None for `os.open`) after
    # making its folders and before it takes the lock its rename holds.
    then, target = _race["then"], _race["target"]
    if event != "open" or then is None or args[1] is not None:
        return
    if not str(args[0]).startswith(str(target)):
        return
    _race["then"] = None  # once: the PUT's retry renames undisturbed
    then()


sys.addaudithook(_hook)


def _send(method: str, url: str, body: bytes | None = None) -> int:
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_put_whose_folder_a_delete_removes_still_lands(tmp_path: Path) -> None:
    with Emulator(tmp_path / "bucket").running_in_thread() as emu:
        assert _send("PUT", emu.http_url("f/g/other"), b"x") == 200
        deleted: list[int] = []
        # After the PUT made its folders and before its rename, the folder's last other
        # key is deleted, which removes the folders the PUT is about to rename into.
        _race.update(
            target=emu.root / TMP_DIR,
            then=lambda: deleted.append(_send("DELETE", emu.http_url("f/g/other"))),
        )
        try:
            assert _send("PUT", emu.http_url("f/g/mine"), b"mine") == 200
        finally:
            _race["then"] = None
        assert deleted == [204]
        assert (emu.root / "f" / "g" / "mine").read_bytes() == b"mine"


# -- names the file system refuses -------------------------------------------------------


@pytest.mark.parametrize("method", ["PUT", "GET", "HEAD", "DELETE"])
async def test_a_key_segment_longer_than_a_file_name_is_a_400(
    emu: Emulator, http: aiohttp.ClientSession, method: str
) -> None:
    key = "a/" + "n" * 256 + "/b"
    status, _, body = await fetch(http, method, emu.http_url(key), data=b"x")
    assert status == 400  # was 500
    if method != "HEAD":
        assert error_code(body) == "KeyTooLongError"
        assert b"255" in body
    assert (await fetch(http, "GET", emu.http_url("a/" + "n" * 255)))[0] == 404


async def test_a_symlink_loop_is_no_object_and_no_500(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    os.symlink("loop", emu.root / "loop")
    for method in ("GET", "HEAD"):
        assert (await fetch(http, method, emu.http_url("loop/x")))[0] == 404  # was 500
    status, _, body = await fetch(http, "PUT", emu.http_url("loop/x"), data=b"x")
    assert (status, error_code(body)) == (400, "InvalidArgument")
    assert (await fetch(http, "DELETE", emu.http_url("loop/x")))[0] == 204


@pytest.mark.parametrize("char", ["\ufffe", "\uffff"])
async def test_a_key_xml_cannot_carry_is_refused(
    emu: Emulator, http: aiohttp.ClientSession, char: str
) -> None:
    status, _, body = await fetch(http, "PUT", emu.http_url(f"k{char}"), data=b"x")
    assert (status, error_code(body)) == (400, "InvalidArgument")
    assert b"U+FFFE" in body
    (emu.root / f"file{char}").write_bytes(b"x")  # one put there some other way
    status, _, body = await fetch(http, "GET", emu.http_url("") + "?list-type=2")
    keys = [k.text for k in ElementTree.fromstring(body).iter(f"{NS}Key")]
    assert (status, keys) == (200, ["ok"])  # not listed: the page stays XML


async def test_a_write_the_folder_refuses_is_an_s3_error(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    (emu.root / TMP_DIR).rmdir()  # made as the server started; then
    (emu.root / TMP_DIR).write_bytes(b"")  # the temp folder cannot be made again
    status, headers, body = await fetch(http, "PUT", emu.http_url("k"), data=b"x")
    assert (status, headers["Content-Type"]) == (500, "application/xml")  # was a traceback
    assert error_code(body) == "InternalError"
    assert b"File exists" in body
