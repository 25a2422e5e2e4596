"""A sync call from an exit handler that runs after aiozarr's own (registered before
`import aiozarr`): aiozarr's loop thread is gone by then, and Python 3.12 refuses to
start threads at interpreter exit, so the call raised a bare `RuntimeError` and the
save was lost. The call now runs on the calling thread. (Python 3.11 starts the thread;
the CI's Python 3.12 step runs this file.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aiozarr

CHILD = r"""
import atexit, sys
path = sys.argv[1]
def save():
    a = aiozarr.open_array(path)
    a[0] = 42
    a.attrs["saved"] = True
atexit.register(save)  # before the import: runs after aiozarr's own exit handler
import aiozarr
aiozarr.create_array(path, shape=(10,), dtype="i4", fill_value=0)
"""


def test_a_save_in_a_late_exit_handler_lands(tmp_path: Path) -> None:
    path = str(tmp_path / "x.zarr")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, path], capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0 and child.stderr == "", child.stderr[-2000:]
    saved = aiozarr.open_array(path, mode="r")
    assert saved.attrs["saved"] is True
    np.testing.assert_array_equal(saved[:3], [42, 0, 0])


# Many calls from the late handler, each of which meets the refusal to start a thread,
# under a low limit of open files: a loop made for a thread that cannot start kept its
# file descriptors (uvloop's closes them only when closed), and the later calls failed
# with "Too many open files".
MANY = r"""
import atexit, resource, sys
path = sys.argv[1]
def save():
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    a = aiozarr.open_array(path)
    for i in range(40):
        a[i] = i
atexit.register(save)
import aiozarr
aiozarr.create_array(path, shape=(40,), dtype="i4", fill_value=-1)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no resource module")
def test_many_calls_from_a_late_exit_handler_all_land(tmp_path: Path) -> None:
    path = str(tmp_path / "x.zarr")
    child = subprocess.run(
        [sys.executable, "-c", MANY, path], capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0 and child.stderr == "", child.stderr[-2000:]
    np.testing.assert_array_equal(aiozarr.open_array(path, mode="r")[:], np.arange(40))
