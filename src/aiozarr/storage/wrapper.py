"""`WrapperStore`: the base of stores that pass their requests on to another store.

A wrapper (counting requests, say) is the store it wraps in everything it does not
change: capabilities, coalescing settings, how ranges are read, and the runtime
(budgets, write locks, statistics), so wrapping a store never changes how it is used.
"""

from __future__ import annotations

from aiozarr.storage.base import Store
from aiozarr.storage.runtime import StoreRuntime

__all__ = ["WrapperStore"]


class WrapperStore(Store):
    """A store over `inner`; subclasses override the operations they watch or change."""

    def __init__(self, inner: Store) -> None:
        super().__init__(read_only=inner.read_only)
        self.inner = inner

    @property  # type: ignore[override]
    def coalesce_gap_bytes(self) -> int | None:
        return self.inner.coalesce_gap_bytes

    @property  # type: ignore[override]
    def max_request_bytes(self) -> int | None:
        return self.inner.max_request_bytes

    @property  # type: ignore[override]
    def hedge_reads(self) -> bool:
        return self.inner.hedge_reads

    @property  # type: ignore[override]
    def verify_short_reads(self) -> bool:
        return self.inner.verify_short_reads

    @property  # type: ignore[override]
    def reads_ranges_at_once(self) -> bool:
        return self.inner.reads_ranges_at_once

    @property
    def runtime(self) -> StoreRuntime:
        return self.inner.runtime

    @property
    def readable(self) -> bool:
        return self.inner.readable

    @property
    def writable(self) -> bool:
        return self.inner.writable

    @property
    def listable(self) -> bool:
        return self.inner.listable

    @property
    def supports_partial_reads(self) -> bool:
        return self.inner.supports_partial_reads

    @property
    def supports_conditional_writes(self) -> bool:
        return self.inner.supports_conditional_writes

    @property
    def supports_conditional_deletes(self) -> bool:
        return self.inner.supports_conditional_deletes

    @property
    def conditions_from_server(self) -> bool:
        return self.inner.conditions_from_server

    @property
    def read_only(self) -> bool:
        return self.inner.read_only
