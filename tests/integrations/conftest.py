"""Fixtures for the xarray and dask tests: an emulator on a thread, and a store that
counts round trips on the critical path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aiozarr.emulator import Emulator
from aiozarr.storage.url import from_url
from aiozarr.testing.round_trips import RoundTripStore

__all__ = ["LATENCY_MS", "RoundTripStore"]

LATENCY_MS = 20


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """An S3 emulator with 20 ms latency on a background thread (one per module)."""
    root = tmp_path_factory.mktemp("bucket")
    with Emulator(root, latency_ms=LATENCY_MS).running_in_thread() as emu:
        yield emu


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
