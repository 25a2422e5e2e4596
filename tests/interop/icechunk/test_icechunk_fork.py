"""A child forked while a parent thread held one of the icechunk reader's module locks
(the cache of repository files, taken by every read of a snapshot or manifest; the one a
store takes as it indexes its first snapshot) reads the repository: both were plain
locks, inherited held, and the child hung on its first read."""

from __future__ import annotations

import os

import numpy as np
import pytest
from tests.forking import run_in_fork
from tests.interop.icechunk.generate import Written

import aiozarr
from aiozarr.storage.references.icechunk import kept
from aiozarr.storage.references.icechunk import store as icechunk_store

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    pytest.mark.timeout(120),
]


def test_a_child_forked_while_the_locks_were_held_reads(written: Written) -> None:
    expected = np.arange(9) * 1000
    with kept._lock, icechunk_store._FIRST_INDEX:  # held as the child is forked

        def child() -> None:
            read = aiozarr.open_array(written.path, "late", mode="r")[...]
            np.testing.assert_array_equal(read, expected)

        run_in_fork(child)
