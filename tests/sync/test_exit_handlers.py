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


# A late exit handler's call, with a thread that `threading` did not start (as obstore's
# tokio threads are not) inside Python: aiozarr's own exit wait for such threads gives up
# at once here (its limit 0), and the late call must wait for them again itself.
NATIVE = r"""
import _thread, atexit, logging, sys
path = sys.argv[1]
def save():
    obstore_exit.EXIT_WAIT_S = 100  # the test lets the thread go, however busy the machine
    aiozarr.open_array(path)[0] = 42
    print("saved", flush=True)
atexit.register(save)  # before the import: runs after aiozarr's own exit handlers
import aiozarr
from aiozarr.storage.backends import obstore_exit
obstore_exit.EXIT_WAIT_S = 0
said = logging.getLogger("aiozarr.store")
said.setLevel(logging.DEBUG)
handler = logging.StreamHandler()
handler.addFilter(lambda record: record.getMessage().startswith("exit waits"))
said.addHandler(handler)
aiozarr.create_array(path, shape=(10,), dtype="i4", fill_value=0)
inside = _thread.allocate_lock()
inside.acquire()
def native():  # as a tokio thread handing an answer over: in Python, GIL released
    inside.release()
    sys.stdin.readline()
    print("left Python", flush=True)
_thread.start_new_thread(native, ())
inside.acquire()
"""


def test_a_late_exit_handlers_call_waits_for_native_threads(tmp_path: Path) -> None:
    """The interpreter may finalize as soon as a late exit handler's call returns: an
    obstore thread still handing over that call's last answer then aborted the process
    (SIGABRT, 2 of 15 runs on 3.11, 5 of 15 on 3.12, reading from the emulator), since
    aiozarr's own wait for such threads had run before the call."""
    path = str(tmp_path / "x.zarr")
    child = subprocess.Popen(
        [sys.executable, "-c", NATIVE, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stderr is not None
    waits = "exit waits for 1 native thread(s) to leave Python\n"
    try:
        assert child.stderr.readline() == waits  # aiozarr's own handler, giving up at once
        said = child.stderr.readline()  # the late call's wait: EOF if there is none
        assert said == waits, said
        child.stdin.write("go\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, err
    assert out == "left Python\nsaved\n"
    np.testing.assert_array_equal(aiozarr.open_array(path, mode="r")[:2], [42, 0])
