"""Fixtures for the command-line, copy and reference-store tests: one emulator per session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiozarr.emulator import Emulator


@pytest.fixture(scope="session")
def emulator_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    root = tmp_path_factory.mktemp("cli-emulator")
    with Emulator(root).running_in_thread() as emu:
        yield emu


@pytest.fixture
def emulator(emulator_server: Emulator) -> Iterator[Emulator]:
    """The session's emulator, counters zeroed, no latency, no faults."""
    emulator_server.clear_faults()
    emulator_server.set_latency(0)
    emulator_server.reset_stats()
    yield emulator_server
    emulator_server.clear_faults()
    emulator_server.set_latency(0)


@pytest.fixture
def prefix() -> str:
    """A fresh key prefix in the bucket."""
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def bucket_dir(emulator: Emulator) -> Path:
    """The directory the emulator serves as its bucket."""
    return emulator.root
