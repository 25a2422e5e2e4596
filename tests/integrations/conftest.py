"""Fixtures for the xarray and dask tests: the session's emulator (tests/conftest.py)
answering after 20 ms, and a store that counts round trips on the critical path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aiozarr.emulator import Emulator
from aiozarr.storage.opening.url import from_url
from aiozarr.testing.round_trips import RoundTripStore

__all__ = ["LATENCY_MS", "RoundTripStore"]

LATENCY_MS = 20


@pytest.fixture
def emulator(emulator: Emulator) -> Emulator:
    """The session's emulator, reset for this test, answering after `LATENCY_MS`: round
    trips then show in time as they do against a cloud store."""
    emulator.set_network(latency_ms=LATENCY_MS)
    return emulator


@pytest.fixture
def emulator_store(emulator: Emulator) -> Callable[[str], RoundTripStore]:
    """`emulator_store(path)`: a round-trip-counting store over the emulator, rooted at `path`."""

    def make(path: str) -> RoundTripStore:
        inner = from_url(emulator.s3_url(path), storage_options=emulator.storage_options())
        return RoundTripStore(inner)

    return make


@pytest.fixture
def local_path(emulator: Emulator) -> Callable[[str], Path]:
    """`local_path(path)`: where the emulator keeps `path` on disk (for zarr-python)."""
    return lambda path: emulator.root / path
