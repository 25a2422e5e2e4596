"""A key, or a folder on its way, swapped for a symlink out of the served folder between
the server's check of its path and its use: the link was followed, and the file
outside served, written or deleted. The open file, and the key's folder opened once for
its rename or unlink, are checked now (Linux: the path the system keeps for a
descriptor), and a write or delete goes through that folder's descriptor."""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aiozarr.emulator import Emulator
from aiozarr.emulator.paths import TMP_DIR

_race: dict[str, Any] = {"path": None, "then": None}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # The server opens a path under `_race["path"]` (the key's checked already): just
    # before, another user of the folder swaps something on its way for a link out.
    then: Callable[[], None] | None = _race["then"]
    if event == "open" and then is not None and str(args[0]).startswith(str(_race["path"])):
        _race["then"] = None
        then()


sys.addaudithook(_hook)


def _get(url: str, method: str, body: bytes | None = None) -> tuple[int, bytes]:
    try:
        request = urllib.request.Request(url, data=body, method=method)
        with urllib.request.urlopen(request) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc to ask")
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_key_swapped_for_a_link_out_is_not_served(tmp_path: Path, method: str) -> None:
    served, outside = tmp_path / "served", tmp_path / "outside"
    served.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(b"TOP-SECRET")
    (served / "obj").write_bytes(b"fine")
    (served / "link").symlink_to(outside / "secret")  # made aside, then swapped in

    def swap() -> None:
        os.replace(served / "link", served / "obj")

    with Emulator(served, read_only=True).running_in_thread() as emu:
        _race.update(path=served / "obj", then=swap)
        try:
            status, body = _get(emu.http_url("obj"), method)
        finally:
            _race["then"] = None
    assert (served / "obj").is_symlink()  # the swap happened
    assert status == 403  # was 200
    assert b"TOP-SECRET" not in body


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc to ask")
@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_a_folder_swapped_for_a_link_out_is_not_written_through(
    tmp_path: Path, method: str
) -> None:
    served, outside = tmp_path / "served", tmp_path / "outside"
    (served / "d").mkdir(parents=True)
    outside.mkdir()
    (served / "d" / "obj").write_bytes(b"old")
    (outside / "obj").write_bytes(b"VICTIM")
    (served / "link").symlink_to(outside, target_is_directory=True)

    def swap() -> None:  # the key's folder becomes a link to `outside`
        os.rename(served / "d", served / "d-moved")
        os.rename(served / "link", served / "d")

    with Emulator(served).running_in_thread() as emu:
        # PUT: as its body lands in the temp folder; DELETE: as the key's folder opens.
        on_its_way = served / (TMP_DIR if method == "PUT" else "d")
        _race.update(path=on_its_way, then=swap)
        try:
            status, _ = _get(emu.http_url("d/obj"), method, b"EVIL" if method == "PUT" else None)
        finally:
            _race["then"] = None
    assert (served / "d").is_symlink()  # the swap happened
    assert status == 403  # was 200 (204)
    assert (outside / "obj").read_bytes() == b"VICTIM"  # was b"EVIL" (deleted)
