"""A process that used obstore exits only once obstore's threads have left Python.

The abort this prevents (storage/backends/obstore_exit.py) needs a tokio thread to be inside
Python at the moment the interpreter finalizes. Here a thread that Python's `threading`
did not start (as tokio's are not) sits inside Python code, blocked reading stdin, when
the program ends; the test lets it go only once the exit says it waits for it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

CHILD = """
import _thread, logging, sys
import aiozarr.storage.backends.object_store
from aiozarr.storage.backends import obstore_exit

obstore_exit.EXIT_WAIT_S = 100  # the test lets the thread go, however busy the machine

logging.basicConfig(level=logging.DEBUG, format="%(message)s")

inside = _thread.allocate_lock()
inside.acquire()

def native():  # as a tokio thread in `loop.call_soon_threadsafe`: in Python, GIL released
    inside.release()
    sys.stdin.readline()
    print("left Python", flush=True)

_thread.start_new_thread(native, ())
inside.acquire()  # the thread runs Python code
print("main ends", flush=True)
"""


def test_exit_waits_for_a_native_thread_to_leave_python() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    try:
        assert child.stdout.readline() == "main ends\n"
        said = child.stderr.readline()  # the exit's own word that it waits: EOF if not
        assert said == "exit waits for 1 native thread(s) to leave Python\n", said
        child.stdin.write("go\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, err
    assert out == "left Python\n"
