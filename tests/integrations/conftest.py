"""Fixtures for the xarray and dask tests: an emulator on a thread, and a store that
counts round trips on the critical path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import pytest

from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.base import Store
from aiozarr.storage.counting import CountingStore
from aiozarr.storage.url import from_url

LATENCY_MS = 20


class RoundTripStore(CountingStore):
    """A `CountingStore` that also measures `depth`: the round trips on the critical path.

    A request's depth is one more than the deepest request that had already finished
    when it started, so requests sent together share a depth and a request sent after
    an answer came back is one deeper. `depth` is the deepest request seen.
    """

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.depth = 0
        self._finished = 0

    def reset(self) -> None:
        super().reset()
        self.depth = self._finished = 0

    def _begin(self) -> int:
        level = self._finished + 1
        self.depth = max(self.depth, level)
        return level

    def _end(self, level: int) -> None:
        self._finished = max(self._finished, level)

    async def read(  # type: ignore[no-untyped-def]
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ):
        level = self._begin()
        try:
            return await super().read(key, byte_range, max_bytes)
        finally:
            self._end(level)

    async def read_ranges(  # type: ignore[no-untyped-def]
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ):
        level = self._begin()
        try:
            return await super().read_ranges(key, byte_ranges, max_bytes)
        finally:
            self._end(level)

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        level = self._begin()
        try:
            async for name in super().list_dir(prefix):
                yield name
        finally:
            self._end(level)


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
