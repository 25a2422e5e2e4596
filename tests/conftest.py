"""Fixtures every test folder shares: one emulator for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aiozarr.testing.emulator import Emulator


@pytest.fixture(scope="session")
def emulator_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The emulator for the whole session (prefer `emulator`, which resets it)."""
    root = tmp_path_factory.mktemp("emulator")
    with Emulator(root).running_in_thread() as emu:
        yield emu


@pytest.fixture
def emulator(emulator_server: Emulator) -> Iterator[Emulator]:
    """The session's emulator with zeroed counters, no latency and no faults."""
    emu = emulator_server
    emu.clear_faults()
    emu.set_latency(0)
    emu.set_list_latency(0)
    emu.reset_stats()
    yield emu
    emu.clear_faults()
    emu.set_latency(0)
    emu.set_list_latency(0)
