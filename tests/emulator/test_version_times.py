"""A new version of a key never carries the times of the one it replaces.

A version's ETag is its inode, times and size: the rename of a PUT frees the old
inode, which the next temp file may get back, and a file system with coarse times
gives both the same times; the two versions then had one ETag, and an If-Match or
If-None-Match naming the old one matched the new one (a lost update, a stale 304).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from aiozarr.emulator import files


def _replace_with_same_times(tmp_path: Path, lock: threading.Lock | None) -> None:
    path = tmp_path / "c" / "0"
    path.parent.mkdir()
    path.write_bytes(b"version one")
    old = path.stat()
    tmp = tmp_path / "tmp"
    tmp.write_bytes(b"version two")  # the same size: only times tell them apart
    os.utime(tmp, ns=(old.st_atime_ns, old.st_mtime_ns))  # a clock that has not ticked
    condition = (lock, {"If-Match": files.etag_of(old)}) if lock is not None else None
    written = files.move_into_place(tmp, path, condition)
    new = path.stat()
    assert new.st_mtime_ns > old.st_mtime_ns
    assert written.st_mtime_ns == new.st_mtime_ns
    assert files.generation_of(new) != files.generation_of(old)
    assert path.read_bytes() == b"version two"


def test_a_plain_put_moves_past_the_replaced_version(tmp_path: Path) -> None:
    _replace_with_same_times(tmp_path, None)


def test_a_conditional_put_moves_past_the_version_it_named(tmp_path: Path) -> None:
    _replace_with_same_times(tmp_path, threading.Lock())
