"""The settings one read or write runs under, resolved once as it starts.

A read's or a write's stages run in tasks and on threads; resolving `config` once at
the start (the innermost `config.set` block there, else the process's settings) and
carrying the result means every stage sees the same values. How many requests of what
size a read sends is the store's request policy's (`RequestShape`), resolved here once
with the rest.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import anyio

from aiozarr import config
from aiozarr.storage.policy import RequestShape


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """What a read's stages need of the settings (see `aiozarr.config.Config`)."""

    #: The requests the read sends: their sizes and counts (the store's sizes where it
    #: has its own).
    shape: RequestShape
    #: The bound on a value whose size the data decides (variable-length types):
    #: `max_inflight_bytes`, since a value larger than it cannot be read within it.
    unbounded_value_bytes: int

    @classmethod
    def of(cls, store: Any) -> ReadSettings:
        """The settings in force here, for a read of `store`."""
        settings = config.get()
        return cls(
            shape=RequestShape.of(store.capabilities, settings, store.runtime.statistics.link()),
            unbounded_value_bytes=unbounded_value_bytes(settings),
        )


def unbounded_value_bytes(settings: config.Config | None = None) -> int:
    """`ReadSettings.unbounded_value_bytes` alone, for a read that needs no request shape
    (values in memory, read inline)."""
    return (config.get() if settings is None else settings).max_inflight_bytes


@dataclass(frozen=True, slots=True)
class WriteSettings:
    """What a write's stages need of the settings (see `aiozarr.config.Config`)."""

    #: Store a chunk even when it is all fill value (else it is deleted, or not written).
    write_empty_chunks: bool
    #: How long a write retries the keys whose conditional write met another writer's
    #: version, and the backoff between tries (`retry_*`: the request retries' own).
    retry_deadline_s: float
    retry_base_delay_s: float
    retry_max_delay_s: float

    @classmethod
    def of(cls) -> WriteSettings:
        """The settings in force here."""
        settings = config.get()
        return cls(
            write_empty_chunks=settings.write_empty_chunks,
            retry_deadline_s=settings.retry_deadline_s,
            retry_base_delay_s=settings.retry_base_delay_s,
            retry_max_delay_s=settings.retry_max_delay_s,
        )

    async def back_off(self, attempt: int) -> None:
        """Wait before try `attempt + 1` of a write that met another writer's version: a
        random while up to a bound that doubles with each try (writers that collided
        would collide again in step)."""
        grown = self.retry_base_delay_s * 2 ** min(attempt, 30)
        await anyio.sleep(random.uniform(0, min(self.retry_max_delay_s, grown)))
