"""A progress callback that ends the program (`sys.exit()`, `KeyboardInterrupt`) runs on
aiozarr's event loop thread: asyncio let the exception stop the loop, so the call and
every other thread's call waiting on that loop hung for good. The caller gets it now,
and the loop serves the other calls on.

Run in a child process with a deadline, so the code before the fix fails instead of
hanging the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import sys, threading, aiozarr
path, raised = sys.argv[1], sys.argv[2]
a = aiozarr.create_array(path, shape=(64, 64), dtype="i4", chunks=(8, 8), fill_value=0)
a[...] = 3
other = []
def reader():  # another thread's calls, meanwhile
    for _ in range(200):
        assert (a[0:8, 0:8] == 3).all()
    other.append("done")
thread = threading.Thread(target=reader)
thread.start()
def abort(done, total):
    if done >= total // 2:
        raise SystemExit("user aborted") if raised == "SystemExit" else KeyboardInterrupt()
try:
    a.getitem(..., progress=abort)
    print("returned")
except BaseException as error:
    print("raised", type(error).__name__)
thread.join()
print("other", other, "after", int(a[5, 5]), flush=True)
"""


@pytest.mark.parametrize("raised", ["SystemExit", "KeyboardInterrupt"])
def test_the_caller_gets_it_and_other_calls_go_on(tmp_path: Path, raised: str) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "a.zarr"), raised],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.stdout.split("\n")[:2] == [f"raised {raised}", "other ['done'] after 3"], (
        child.stderr[-2000:]
    )
