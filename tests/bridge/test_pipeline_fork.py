"""A child forked while a parent thread held the codec pipeline's table of aiozarr stores
(taken by every batch to find the store behind zarr-python's) reads through the
pipeline: the table's lock was a plain one, inherited held, and the child hung."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import zarr
from tests.bridge.pipeline_helpers import aiozarr_pipeline

from aiozarr.zarr import pipeline_stores

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    pytest.mark.timeout(120),
]

CHILD_DEADLINE_S = 20.0


def test_a_child_forked_while_the_store_table_was_held_reads(tmp_path: Path) -> None:
    values = np.arange(64, dtype="i4").reshape(8, 8)
    with aiozarr_pipeline():
        z = zarr.create_array(str(tmp_path / "a.zarr"), shape=(8, 8), chunks=(4, 4), dtype="i4")
        z[...] = values
        np.testing.assert_array_equal(z[...], values)
        with pipeline_stores._lock:
            pid = os.fork()
            if pid == 0:  # the child: never return into pytest
                ok = False
                try:
                    again = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
                    ok = again[...].tolist() == values.tolist()
                finally:
                    os._exit(0 if ok else 1)
    end = time.monotonic() + CHILD_DEADLINE_S
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, "the child read wrong values"
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung: no exit within {CHILD_DEADLINE_S} s")
