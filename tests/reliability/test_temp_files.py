"""Temporary files of writers killed mid-write do not pile up in a LocalStore.

A write goes to `.<name>.<host>-<pid>-<random>.aiozarr-tmp` and is renamed into place;
a writer killed before the rename leaves that file. The next process to write into the
directory removes the files of dead writers of this host (and any older than an hour),
and leaves those of live writers alone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aiozarr.storage.backends.local import TEMP_SUFFIX, LocalStore

pytestmark = pytest.mark.timeout(60)


def _temps(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIX))


def _killed_mid_write(root: Path, times: int) -> None:
    """Start a writer of a large value `times` times; SIGKILL each once its temp exists."""
    script = textwrap.dedent(f"""
        import asyncio
        from aiozarr.storage.backends.local import LocalStore
        store = LocalStore({str(root)!r})
        asyncio.run(store.set("c/big", bytes(1 << 30)))  # 1 GiB: long enough to be killed
    """)
    for _ in range(times):
        child = subprocess.Popen([sys.executable, "-c", script])
        deadline = time.monotonic() + 30
        while not (root / "c").exists() or len(_temps(root / "c")) == 0:
            assert time.monotonic() < deadline, "the writer never started its temp file"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()


def test_the_next_write_removes_what_killed_writers_left(tmp_path: Path) -> None:
    _killed_mid_write(tmp_path, 3)
    directory = tmp_path / "c"
    left = _temps(directory)
    assert len(left) >= 1  # a SIGKILL leaves the temp file behind
    host = left[0].name.split(".")[2].split("-")[0]  # `.big.<host>-<pid>-<hex>.aiozarr-tmp`
    live = directory / f".x.{host}-{os.getpid()}-ab{TEMP_SUFFIX}"
    live.write_bytes(b"a write in progress in a live process")
    foreign = directory / f".y.otherhost-1-cd{TEMP_SUFFIX}"
    foreign.write_bytes(b"")
    asyncio.run(LocalStore(tmp_path).set("c/other", b"new"))
    assert _temps(directory) == sorted([live, foreign])  # the killed writers' are gone
    old = time.time() - 2 * 3600
    os.utime(foreign, (old, old))
    asyncio.run(LocalStore(tmp_path).set("c/another", b"new"))  # a new store sweeps again
    assert _temps(directory) == [live]
    assert (directory / "other").read_bytes() == b"new"
