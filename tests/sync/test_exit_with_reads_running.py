"""Interpreter exit with a sync call still running in a daemon thread: a read is
cancelled, so the process ends at once with nothing printed; a write is waited for, so
its chunks land whole.

The child process starts the call in a daemon thread and waits on stdin; the test lets
it return only once the emulator holds the call's request (`inflight`), and bounds the
wait for its exit, so the code before the fix fails instead of hanging."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.object_store import ObjectStore

pytestmark = pytest.mark.timeout(120)

CHILD = r"""
import sys, threading, aiozarr
from obstore.store import S3Store
from aiozarr.storage.backends.object_store import ObjectStore
port, bucket, prefix, what = sys.argv[1:5]
store = ObjectStore(S3Store(bucket, prefix=prefix, endpoint=f"http://127.0.0.1:{port}",
    region="us-east-1", skip_signature=True, virtual_hosted_style_request=False,
    client_options={"allow_http": True}))
opens = {"open_array": lambda: aiozarr.open_array(store, "a"),
    "open": lambda: aiozarr.open(store, "a"),
    "open_group": lambda: aiozarr.open_group(store, mode="r")}
a = None if what in opens else aiozarr.open_array(store, "a")
def write():
    a[...] = 7
calls = {"read": lambda: a[...], "read_many": lambda: aiozarr.read_many([(a, ...)]), **opens}
threading.Thread(target=calls.get(what, write), daemon=True).start()
print("started", flush=True)
sys.stdin.readline()  # the test says when: its request is held by the server
if what == "interrupt":  # Ctrl-C once the exit waits for the write
    import os, signal, time
    main = threading.main_thread().ident
    def interrupt():
        while True:
            frame, names = sys._current_frames().get(main), set()
            while frame is not None:
                names.add(frame.f_code.co_name)
                frame = frame.f_back
            if "_close_loop" in names and "wait" in names:
                return os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
    threading.Thread(target=interrupt, daemon=True).start()
"""


def _array(make_store: Callable[..., ObjectStore], prefix: str) -> aiozarr.Array:
    arr = aiozarr.create_array(
        make_store(prefix), "a", shape=(64,), dtype="i4", chunks=(8,), shards=(64,)
    )
    arr[...] = np.arange(64, dtype="i4")
    return arr


def _exit_while_held(emulator: Emulator, prefix: str, what: str) -> str:
    """Run the child; once its call's request is held, let it exit: its stderr. An exit
    that waits for the held request (held far longer) fails on the bound of 30 s."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(emulator.port), emulator.bucket, prefix, what],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "started\n"
        deadline = time.monotonic() + 30
        while emulator.stats()["inflight"] < 1:  # the call's request, held back
            assert time.monotonic() < deadline and child.poll() is None
            threading.Event().wait(0.01)
        _, err = child.communicate("go\n", timeout=30)
        return err
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()


@pytest.mark.parametrize(
    ("call", "held"),
    [
        ("read", "*a/c/*"),
        ("read_many", "*a/c/*"),
        # opening reads metadata only (a group in mode "r"), so exit cancels it too
        ("open_array", "*zarr.json"),
        ("open", "*zarr.json"),
        ("open_group", "*zarr.json"),
    ],
)
def test_a_read_in_progress_does_not_hold_up_exit(
    emulator: Emulator,
    emulator_s3_store: Callable[..., ObjectStore],
    prefix: str,
    call: str,
    held: str,
) -> None:
    _array(emulator_s3_store, prefix)
    emulator.inject("late", key_glob=held, methods=["GET"], delay_s=120)
    assert _exit_while_held(emulator, prefix, call) == ""


def test_a_write_in_progress_lands_whole_before_exit(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore], prefix: str
) -> None:
    arr = _array(emulator_s3_store, prefix)
    emulator.inject("late", key_glob="*a/c/*", methods=["PUT"], delay_s=2)
    assert _exit_while_held(emulator, prefix, "write") == ""
    assert (arr[...] == 7).all()  # the exit waited for the write: its daemon thread dies with it


def test_ctrl_c_while_exit_waits_for_a_write_ends_quietly(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore], prefix: str
) -> None:
    _array(emulator_s3_store, prefix)
    emulator.inject("late", key_glob="*a/c/*", methods=["PUT"], delay_s=120)
    assert _exit_while_held(emulator, prefix, "interrupt") == ""
