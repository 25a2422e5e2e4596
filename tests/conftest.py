"""Fixtures every test folder shares: one emulator for the whole session, and dask's
scratch space kept inside pytest's temporary directory.

Hedged reads are off in the test suite (child processes inherit it through the
environment): a hedge is a second request sent when a read is slower than its peers,
so request counts would depend on the machine's load. tests/stores/test_hedging.py
turns it on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

os.environ.setdefault("AIOZARR_HEDGE_READS", "0")

from aiozarr.emulator import Emulator


@pytest.fixture(scope="session", autouse=True)
def dask_scratch_space(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every dask `LocalCluster` of the session (here and in child processes) keeps its
    scratch space under pytest's temporary directory."""
    # Left to itself dask makes `$TMPDIR/dask-scratch-space` and never removes its lock
    # files; pytest removes its own directory after a passing run.
    path = str(tmp_path_factory.mktemp("dask-scratch"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DASK_TEMPORARY_DIRECTORY", path)  # read when dask is first imported
        if "dask" in sys.modules:  # imported while collecting: its config is already read
            import dask

            with dask.config.set({"temporary-directory": path}):
                yield
                return
        yield


@pytest.fixture(scope="session")
def emulator_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The emulator for the whole session (prefer `emulator`, which resets it)."""
    root = tmp_path_factory.mktemp("emulator")
    with Emulator(root).running_in_thread() as emu:
        yield emu


@pytest.fixture
def emulator(emulator_server: Emulator) -> Iterator[Emulator]:
    """The session's emulator with zeroed counters, no faults and no network shaping."""
    emu = emulator_server
    emu.clear_faults()
    emu.set_network(latency_ms=0, bandwidth_mbps=0, tail_rate=0, tail_ms=0)
    emu.set_list_latency(0)
    emu.reset_stats()
    yield emu
    emu.clear_faults()
    emu.set_network(latency_ms=0, bandwidth_mbps=0, tail_rate=0, tail_ms=0)
    emu.set_list_latency(0)
