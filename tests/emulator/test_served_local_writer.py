"""aiozarr's `LocalStore` writing into a folder that `aiozarr serve` serves: its writes at
the top of the folder waited for the server to stop (the server held a flock of the
served folder for its life, and the local store takes an exclusive one of a key's
folder around a conditional write: creating a root group hung); and the server's
conditional writes did not wait for that lock, so one landed between a local writer's
check and its rename, and was lost."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator


@pytest.fixture(params=[False, True], ids=["writable", "read-only"])
def emu(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Emulator]:
    with Emulator(tmp_path, read_only=request.param).running_in_thread() as emu:
        yield emu


def test_the_served_folder_is_not_locked_while_served(emu: Emulator) -> None:
    # The lock a LocalStore takes for a conditional write of a key at the top.
    fd = os.open(emu.root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # was BlockingIOError
    finally:
        os.close(fd)


def test_a_local_writer_creates_a_root_group_while_served(emu: Emulator) -> None:
    group = aiozarr.open_group(emu.root, mode="a")
    group.attrs["title"] = "served"
    group.create_array("x", shape=(3,), dtype="i2", chunks=(2,))[:] = [1, 2, 3]
    served = aiozarr.open_group(emu.s3_url(), storage_options=emu.storage_options(), mode="r")
    assert served.attrs["title"] == "served"
    np.testing.assert_array_equal(served["x"][:], [1, 2, 3])


# -- a conditional write racing a local writer's ---------------------------------------

_race: dict[str, Any] = {"folder": None, "then": None}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # The server asks for the lock of the key's folder: the local writer, which holds
    # it between its check and its rename, renames and lets go first.
    then: Callable[[], None] | None = _race["then"]
    if event != "fcntl.flock" or then is None or not args[1] & fcntl.LOCK_EX:
        return
    with contextlib.suppress(OSError):
        if os.fstat(args[0]).st_ino == _race["folder"]:
            _race["then"] = None
            then()


sys.addaudithook(_hook)


def _send(method: str, url: str, body: bytes | None, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_a_conditional_write_waits_for_a_local_writers_rename(tmp_path: Path, method: str) -> None:
    key = tmp_path / "a" / "c" / "0"
    key.parent.mkdir(parents=True)
    key.write_bytes(b"v1")
    with Emulator(tmp_path).running_in_thread() as emu:
        url = emu.http_url("a/c/0")
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD")) as answer:
            etag = answer.headers["ETag"]
        # A LocalStore `set_if` of the key: it has checked v1 under the folder's lock and
        # is about to rename its value into place.
        local = os.open(key.parent, os.O_RDONLY)
        fcntl.flock(local, fcntl.LOCK_EX)
        (key.parent / ".0.tmp").write_bytes(b"local")

        def local_rename() -> None:
            os.replace(key.parent / ".0.tmp", key)
            os.close(local)

        _race.update(folder=os.fstat(local).st_ino, then=local_rename)
        try:
            body = b"remote" if method == "PUT" else None
            status = _send(method, url, body, {"If-Match": etag})
        finally:
            if _race["then"] is not None:  # the server did not wait (the defect)
                _race["then"] = None
                local_rename()
    # The server's write named v1, which the local writer replaced: it is refused,
    # never acknowledged and then lost (or the local write lost under it).
    assert (status, key.read_bytes()) == (412, b"local")
