"""A daemon thread's sync call that starts once the interpreter is exiting (a notebook's
background saver, its loop still going): aiozarr's exit handler has stopped the loop,
and the call started a new one that nobody stopped, so the interpreter ended with the
write half done, some chunks new and the others old. Such a call now waits for the
interpreter to end it, as a cancelled read's caller does: it starts nothing. An exit
handler's own calls (on the main thread) still run.

The child's daemon thread starts its write once aiozarr's exit handler has run; the
late exit handler lets the interpreter end once a first chunk is stored (or after a
bounded wait, when nothing starts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aiozarr

pytestmark = pytest.mark.timeout(120)

CHILD = r"""
import atexit, os, sys, threading, time
path = sys.argv[1]
exiting = threading.Event()
def late():  # registered before the import: runs after aiozarr's exit handler
    if sys.argv[2] == "reads":  # a call of its own first: a new loop, on Python 3.11
        import aiozarr
        aiozarr.open_array(path)[0, 0]
    exiting.set()
    deadline = time.monotonic() + 3
    while not stored() and time.monotonic() < deadline:
        time.sleep(0.001)  # until a first chunk is stored, or long enough to tell none is
def stored():
    walk = os.walk(os.path.join(path, "c"))
    return any(not name.endswith("tmp") for _, _, names in walk for name in names)
atexit.register(late)
import numpy as np, aiozarr
array = aiozarr.open_array(path)
def save():
    exiting.wait()
    array[...] = np.ones(array.shape, array.dtype)
threading.Thread(target=save, daemon=True).start()
"""


@pytest.mark.parametrize("late_handler", ["waits", "reads"])
def test_a_write_starting_at_exit_leaves_no_half_written_array(
    tmp_path: Path, late_handler: str
) -> None:
    """`reads`: the late exit handler makes a sync call of its own before the daemon's
    write starts. Where threads may still start (Python 3.11) that call starts a new
    loop, which the daemon's write took: nothing stopped it, and the interpreter ended
    it with 512-1280 of the 65,536 elements written."""
    path = str(tmp_path / "x.zarr")
    aiozarr.create_array(path, shape=(256, 256), dtype="i4", chunks=(16, 16), fill_value=0)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, path, late_handler],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert child.returncode == 0 and child.stderr == "", child.stderr[-2000:]
    values = aiozarr.open_array(path, mode="r")[...]
    assert np.unique(values).size == 1, f"{np.count_nonzero(values)} of {values.size} written"
