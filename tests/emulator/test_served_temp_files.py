"""What a body on its way in leaves in the emulator's temp folder when it does not land:
nothing, whether the write fails (a full disk), the server is stopped (SIGTERM) or the
key lies on another file system than the temp folder; the old object stays whole."""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from tests.security.test_serve import serving

from aiozarr.emulator import files
from aiozarr.emulator.files import TMP_DIR

BIG = 3 << 20  # spilled to a temp file as it arrives (more than 1 MiB)


def test_sigterm_during_an_upload_stops_the_server_cleanly(tmp_path: Path) -> None:
    """SIGTERM (docker stop, systemd) killed the server at once, status -15, and the
    body on its way in stayed in the temp folder; now it stops as Ctrl-C does."""
    served = tmp_path / "served"
    served.mkdir()
    (served / "obj").write_bytes(b"old")
    with (
        serving(served, "--allow-writes") as (process, port, _),
        socket.create_connection(("127.0.0.1", port)) as client,
    ):
        head = f"PUT /served/obj HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {BIG}\r\n\r\n"
        client.sendall(head.encode() + b"x" * (BIG // 2))  # then stalls, half sent
        deadline = time.monotonic() + 30
        while not any((served / TMP_DIR).glob("*")):  # the body is on its way in
            assert time.monotonic() < deadline, "the body never reached the temp folder"
            time.sleep(0.01)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    assert list((served / TMP_DIR).glob("*")) == []
    assert (served / "obj").read_bytes() == b"old"


def test_a_write_that_fails_part_way_leaves_no_temp_file(tmp_path: Path) -> None:
    """A write that fails as it copies (a full disk; here a part that is gone) removed
    nothing: its temp file stayed, and the space never came back."""
    tmp_dir, target = tmp_path / TMP_DIR, tmp_path / "obj"
    target.write_bytes(b"old")
    present = tmp_path / "part1"
    present.write_bytes(b"a" * 1000)
    with pytest.raises(FileNotFoundError):
        files.write_atomic(target, tmp_dir, [present, tmp_path / "gone"])
    assert list(tmp_dir.glob("*")) == []
    assert target.read_bytes() == b"old"


def test_a_key_on_another_file_system_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk mounted inside the served folder: the rename from the temp folder cannot
    reach it (EXDEV, answered 500 to every write there); the body is copied beside the
    key under a name no key has, then renamed."""
    tmp_dir, target = tmp_path / TMP_DIR, tmp_path / "mounted" / "obj"
    target.parent.mkdir()
    rename = os.replace

    def across(src: os.PathLike[str] | str, dst: os.PathLike[str] | str, **fds: Any) -> None:
        if Path(src).parent == tmp_dir:  # as a rename out of the temp folder fails there
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        rename(src, dst, **fds)

    monkeypatch.setattr(files.os, "replace", across)
    files.write_atomic(target, tmp_dir, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in target.parent.iterdir()) == ["obj"]
    assert list(tmp_dir.glob("*")) == []
