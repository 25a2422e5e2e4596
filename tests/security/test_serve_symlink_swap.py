"""A key swapped for a symlink out of the served folder between the server's check of its
path and its open: the link was followed and the file outside served. The open file
itself is checked now (Linux: the path the system keeps for the descriptor)."""

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

_race: dict[str, Any] = {"path": None, "then": None}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # The server opens the key's file (its path checked already): just before, another
    # user of the folder swaps it for a link out.
    then: Callable[[], None] | None = _race["then"]
    if event == "open" and then is not None and str(args[0]) == str(_race["path"]):
        _race["then"] = None
        then()


sys.addaudithook(_hook)


def _get(url: str, method: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method)) as answer:
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
