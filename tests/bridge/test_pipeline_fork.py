"""A child forked while a parent thread held the codec pipeline's table of aiozarr stores
(taken by every batch to find the store behind zarr-python's) reads through the
pipeline: the table's lock was a plain one, inherited held, and the child hung."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import zarr
from tests.bridge.pipeline_helpers import aiozarr_pipeline
from tests.forking import run_in_fork

from aiozarr.zarr import pipeline_stores

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    pytest.mark.timeout(120),
]


def test_a_child_forked_while_the_store_table_was_held_reads(tmp_path: Path) -> None:
    values = np.arange(64, dtype="i4").reshape(8, 8)
    with aiozarr_pipeline():
        z = zarr.create_array(str(tmp_path / "a.zarr"), shape=(8, 8), chunks=(4, 4), dtype="i4")
        z[...] = values
        np.testing.assert_array_equal(z[...], values)
        with pipeline_stores._lock:  # held as the child is forked

            def child() -> None:
                again = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
                np.testing.assert_array_equal(again[...], values)

            run_in_fork(child)
