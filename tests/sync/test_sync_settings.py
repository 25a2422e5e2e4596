"""The sync facade's edges: `sync_timeout_s` is None or a finite number of seconds > 0
(infinity: None, no limit), anything else refused by name before any call; and
`np.asarray(arr, copy=False)` is refused as numpy and zarr-python refuse it, since
reading an array always makes a new one."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.errors import AiozarrError
from aiozarr.storage.backends.memory import MemoryStore


@pytest.mark.parametrize("value", [0, -1, math.nan, -math.inf, "5", True])
def test_a_timeout_that_is_no_positive_finite_number_is_refused(value: object) -> None:
    with pytest.raises(AiozarrError, match="sync_timeout_s"):
        config.set(sync_timeout_s=value)
    assert config.get().sync_timeout_s is None  # nothing changed


def test_an_infinite_timeout_is_no_limit() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(4,), dtype="i4", chunks=(2,))
    with config.set(sync_timeout_s=math.inf):
        assert config.get().sync_timeout_s is None
        arr[...] = 3
        assert arr.nbytes_stored() > 0  # a call through the loop, waited for
    with config.set(sync_timeout_s=2):
        assert config.get().sync_timeout_s == 2.0


def test_a_timeout_from_the_environment_is_checked() -> None:
    env = {**os.environ, "AIOZARR_SYNC_TIMEOUT_S": "0"}
    code = "import aiozarr; aiozarr.config.get()"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "AiozarrError" in done.stderr and "sync_timeout_s" in done.stderr


def test_asarray_without_a_copy_is_refused() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(4,), dtype="i4", chunks=(2,))
    arr[...] = np.arange(4, dtype="i4")
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(arr, copy=False)
    assert np.asarray(arr).tolist() == [0, 1, 2, 3]
    assert np.asarray(arr, copy=True).tolist() == [0, 1, 2, 3]
    assert np.asarray(arr, dtype="f8").dtype == np.float64
