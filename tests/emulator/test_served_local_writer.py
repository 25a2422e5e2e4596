"""aiozarr's `LocalStore` writing into a folder that `aiozarr serve` serves: its writes at
the top of the folder waited for the server to stop (the server held a flock of the
served folder for its life, and the local store takes an exclusive one of a key's
folder around a conditional write: creating a root group hung)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator


@pytest.fixture(params=[False, True], ids=["writable", "read-only"])
def emu(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Emulator]:
    with Emulator(tmp_path, read_only=request.param).running_in_thread() as emu:
        yield emu


def test_the_served_folder_is_not_locked_while_served(emu: Emulator) -> None:
    # The lock a LocalStore takes for a conditional write of a key at the top.
    fd = os.open(emu.root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # was BlockingIOError
    finally:
        os.close(fd)


def test_a_local_writer_creates_a_root_group_while_served(emu: Emulator) -> None:
    group = aiozarr.open_group(emu.root, mode="a")
    group.attrs["title"] = "served"
    group.create_array("x", shape=(3,), dtype="i2", chunks=(2,))[:] = [1, 2, 3]
    served = aiozarr.open_group(emu.s3_url(), storage_options=emu.storage_options(), mode="r")
    assert served.attrs["title"] == "served"
    np.testing.assert_array_equal(served["x"][:], [1, 2, 3])
