"""The settings one read runs under, resolved once as it starts.

A read's stages run in tasks and on threads; resolving `config` once at the start (the
innermost `config.set` block there, else the process's settings) and carrying the
result means every stage sees the same values, and a store's own overrides (its
`max_request_bytes`) are applied in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiozarr import config


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """What a read's stages need of the settings (see `aiozarr.config.Config`)."""

    #: Requests larger than this are read as concurrent parts (the store's own size, else
    #: `max_request_bytes`).
    part_bytes: int
    #: The bound on a value whose size the data decides (variable-length types):
    #: `max_inflight_bytes`, since a value larger than it cannot be read within it.
    unbounded_value_bytes: int
    connection_target: int
    read_ahead_fraction: float
    parts_per_object: int

    @classmethod
    def of(cls, store: Any) -> ReadSettings:
        """The settings in force here, with `store`'s own part size where it has one."""
        settings = config.get()
        own = store.max_request_bytes
        return cls(
            part_bytes=settings.max_request_bytes if own is None else own,
            unbounded_value_bytes=settings.max_inflight_bytes,
            connection_target=settings.connection_target,
            read_ahead_fraction=settings.read_ahead_fraction,
            parts_per_object=settings.parts_per_object,
        )
