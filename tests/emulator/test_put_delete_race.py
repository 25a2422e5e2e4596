"""A PUT's answer is about what that PUT wrote, whatever races it.

The emulator answered a PUT with the stat of the object's path after its rename, so a
DELETE landing between the two turned an applied PUT into a 500, and a PUT landing there
handed its own ETag to the other. The racing request is sent at that exact moment by an
audit hook on the removal of the PUT's temp file, which the emulator makes right after
the rename (Python raises the event just before removing it).
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from aiozarr.emulator import Emulator
from aiozarr.emulator.files import TMP_DIR

# Audit hooks cannot be removed: one hook for the module, armed by the test that needs it.
_state: dict[str, Any] = {"tmp_dir": None, "then": None, "answers": []}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    then, tmp_dir = _state["then"], _state["tmp_dir"]
    if event != "os.remove" or then is None or not str(args[0]).startswith(str(tmp_dir)):
        return
    _state["then"] = None  # once: the racing request's own events pass
    _state["answers"].append(_send(*then))


sys.addaudithook(_hook)


def _send(method: str, url: str, body: bytes | None = None) -> tuple[int, str | None]:
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers.get("ETag")
    except urllib.error.HTTPError as exc:
        return exc.code, None


@pytest.fixture
def emu(tmp_path: Path) -> Any:
    with Emulator(tmp_path / "bucket").running_in_thread() as emulator:
        _state.update(tmp_dir=emulator.root / TMP_DIR, answers=[])
        yield emulator
    _state["then"] = None


@pytest.mark.parametrize("conditional", [False, True], ids=["plain", "if-none-match"])
def test_a_put_raced_by_a_delete_answers_its_own_version(emu: Emulator, conditional: bool) -> None:
    url = emu.http_url("k")
    _state["then"] = ("DELETE", url)
    request = urllib.request.Request(url, data=b"abc", method="PUT")
    if conditional:
        request.add_header("If-None-Match", "*")
    with urllib.request.urlopen(request, timeout=30) as answer:  # was a 500
        assert answer.status == 200
        etag = answer.headers["ETag"]
    assert _state["answers"] == [(204, None)]  # the DELETE went in between
    assert etag.strip('"').endswith("-3")  # the version of this PUT's 3 bytes
    assert _send("GET", url)[0] == 404


def test_a_put_raced_by_a_put_answers_its_own_etag(emu: Emulator) -> None:
    url = emu.http_url("k")
    _state["then"] = ("PUT", url, b"other bytes")
    status, etag = _send("PUT", url, b"abc")
    [(other_status, other_etag)] = _state["answers"]
    assert (status, other_status) == (200, 200)
    assert etag != other_etag  # was the other PUT's
    assert _send("GET", url)[1] == other_etag  # the later PUT is what is stored
