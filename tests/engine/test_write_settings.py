"""A write runs under the settings in force as it starts (`engine/settings.WriteSettings`),
resolved once and carried through its stages, as a read does (`ReadSettings`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.engine.settings import WriteSettings
from aiozarr.storage.backends.memory import MemoryStore


@pytest.fixture
def process_settings() -> Iterator[None]:
    """The process-wide settings as they were, back after the test."""
    before = config.process_settings()
    yield
    config.set(**{f.name: getattr(before, f.name) for f in dataclasses.fields(before)})


def test_write_settings_are_those_in_force() -> None:
    with config.set(write_empty_chunks=True, retry_deadline_s=7.0, retry_max_delay_s=0.5):
        settings = WriteSettings.of()
    assert settings.write_empty_chunks is True
    assert (settings.retry_deadline_s, settings.retry_max_delay_s) == (7.0, 0.5)
    assert settings.retry_base_delay_s == config.get().retry_base_delay_s
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.write_empty_chunks = False  # type: ignore[misc]


class _Contended(MemoryStore):
    """Another writer replaces `c/0` just before the first conditional write of it, and
    the process's settings change (`changes`) at that moment. (Creating the array writes
    `zarr.json` only if absent: not counted.)"""

    def __init__(self, changes: dict[str, Any]) -> None:
        super().__init__()
        self.changes = changes
        self.conditional_writes = 0

    async def set_if(self, key: str, value: Any, expected: Any, *, claim: bool = False) -> None:
        if key == "zarr.json":
            await super().set_if(key, value, expected, claim=claim)
            return
        self.conditional_writes += 1
        if self.conditional_writes == 1:
            self._store(key, bytes(self._data[key]))  # the same bytes, a new version
            config.set(**self.changes)  # for the whole process, mid-write
        await super().set_if(key, value, expected, claim=claim)


@pytest.mark.usefixtures("process_settings")
async def test_a_write_retried_after_a_conflict_keeps_the_settings_it_started_with() -> None:
    store = _Contended({"write_empty_chunks": False})
    arr = await aiozarr.create_array_async(store, shape=(8,), dtype="i4", chunks=(4,))
    await arr.setitem(slice(0, 4), np.array([0, 0, 0, 7], dtype="i4"))
    config.set(write_empty_chunks=True)
    await arr.setitem(3, 0)  # the chunk becomes all fill: kept, as the write began
    assert store.conditional_writes == 2  # the conflict, then the write again
    assert "c/0" in store.data
    assert (await arr.getitem(...)).tolist() == [0] * 8
