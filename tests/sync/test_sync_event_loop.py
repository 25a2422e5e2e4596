"""The sync API's background loop is uvloop's by default and asyncio's with
`sync_uvloop` off; on either, writes and reads through a real S3 server (the emulator)
give the values written, and a forked child starts a loop of its own that serves it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiozarr.emulator import Emulator

# Writes and reads an array on the emulator, then one in a local folder, forks (a child
# of a process that used obstore may not use it: obstore_fork.py), and writes and reads
# the folder's array in the child, then in the parent; prints each side's loop and values.
_SCRIPT = """
import asyncio, json, os, sys
import numpy as np
import aiozarr
from aiozarr.sync.portal import run

async def loop_module():
    return type(asyncio.get_running_loop()).__module__.split(".")[0]

def written(url, **options):
    arr = aiozarr.create_array(
        url, shape=(12,), chunks=(2,), shards=(4,), dtype="i4", fill_value=-1, **options
    )
    arr[:10] = np.arange(10, dtype="i4")
    return arr

url, options, folder = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
print("s3", run(loop_module), written(url, storage_options=options)[:].tolist(), flush=True)
arr = written(folder)
pid = os.fork()
if pid == 0:
    arr[10:] = [10, 11]
    print("child", run(loop_module), arr[:].tolist(), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("parent", run(loop_module), arr[:].tolist(), os.waitstatus_to_exitcode(status))
"""


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> object:
    with Emulator(tmp_path_factory.mktemp("bucket")).running_in_thread() as emu:
        yield emu


@pytest.mark.skipif(sys.platform == "win32", reason="no uvloop build, no fork")
@pytest.mark.parametrize(("setting", "expected"), [(None, "uvloop"), ("0", "asyncio")])
def test_the_sync_loop_serves_reads_writes_and_forks(
    emulator: object, tmp_path: Path, setting: str | None, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AIOZARR_SYNC_UVLOOP"}
    if setting is not None:
        env["AIOZARR_SYNC_UVLOOP"] = setting
    url = f"s3://{emulator.bucket}/{tmp_path.name}-{expected}.zarr"  # type: ignore[attr-defined]
    options = json.dumps(emulator.storage_options())  # type: ignore[attr-defined]
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, url, options, str(tmp_path / "local.zarr")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    values = list(range(12))
    assert done.stdout.splitlines() == [
        f"s3 {expected} {[*values[:10], -1, -1]}",
        f"child {expected} {values}",
        f"parent {expected} {values} 0",
    ]
    for complaint in ("Traceback", "Exception ignored", "deallocating"):
        assert complaint not in done.stderr
