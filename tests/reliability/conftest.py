"""Fixtures for the reliability tests: one emulator for the session, reset for each test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from aiozarr.testing.emulator import Emulator


@pytest.fixture(scope="session")
def _emulator_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with Emulator(tmp_path_factory.mktemp("reliability-emulator")).running_in_thread() as emu:
        yield emu


@pytest.fixture
def emu(_emulator_server: Emulator) -> Iterator[Emulator]:
    """The session's emulator with zeroed counters, no latency and no faults."""
    emu = _emulator_server
    emu.clear_faults()
    emu.set_latency(0)
    emu.reset_stats()
    yield emu
    emu.clear_faults()
    emu.set_latency(0)


@pytest.fixture
def s3(emu: Emulator, request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """`(url, storage_options)` of a fresh `s3://` location on the emulator."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")
    return emu.s3_url(f"{name}-{id(request)}.zarr"), emu.storage_options()
