"""`WrapperStore`: the base of stores that pass their requests on to another store.

A wrapper (counting requests, say) is the store it wraps in everything it does not
change: its capabilities (one object, passed through; no inline reads, which would
pass the wrapper by), its read-only flag, its runtime (budgets, write locks,
statistics), its key space (what chunk caches key chunks by) and every operation, so
wrapping a store never changes how it is used. Batches are the base class's, read
through the wrapper's `read` / `read_ranges`: a wrapper sees each backend request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

from aiozarr.byte_range import ByteRange
from aiozarr.storage.policy.backend import RangeSender
from aiozarr.storage.policy.runtime import StoreRuntime
from aiozarr.storage.protocol import (
    Buffer,
    Capabilities,
    RangeRequest,
    Store,
    Unchanged,
    Version,
    Versioned,
)

__all__ = ["ReadOnlyStore", "WrapperStore", "read_only_view"]


class WrapperStore(Store):
    """A store over `inner`; subclasses override the operations they watch or change."""

    def __init__(self, inner: Store) -> None:
        super().__init__(read_only=inner.read_only)
        self.inner = inner
        self._passed: tuple[Capabilities, Capabilities] | None = None

    @property
    def capabilities(self) -> Capabilities:
        """The inner store's, but for inline reads: a wrapper sees every read, and an
        inline read would pass it by."""
        caps = self.inner.capabilities
        passed = self._passed
        if passed is None or passed[0] is not caps:
            passed = self._passed = (caps, replace(caps, inline_reads=False))
        return passed[1]

    @property
    def read_only(self) -> bool:
        return self.inner.read_only

    @property
    def runtime(self) -> StoreRuntime:
        return self.inner.runtime

    def key_space(self) -> tuple[Hashable, str]:
        """The wrapped store's: a wrapper names the same data, so a write through either
        drops what a chunk cache holds of reads through the other."""
        return self.inner.key_space()

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        return await self.inner.read(key, byte_range, max_bytes)

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        return await self.inner.read_ranges(key, byte_ranges, max_bytes)

    async def read_if_changed(
        self, key: str, byte_range: ByteRange | None, version: Version, max_bytes: int | None
    ) -> Versioned | Unchanged | None:
        return await self.inner.read_if_changed(key, byte_range, version, max_bytes)

    async def exists(self, key: str) -> bool:
        return await self.inner.exists(key)

    async def getsize(self, key: str) -> int | None:
        return await self.inner.getsize(key)

    async def set(self, key: str, value: Buffer) -> None:
        await self.inner.set(key, value)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        await self.inner.set_if(key, value, expected, claim=claim)

    async def delete(self, key: str) -> None:
        await self.inner.delete(key)

    async def delete_if(self, key: str, expected: Version) -> None:
        await self.inner.delete_if(key, expected)

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        return self.inner.list_prefix(prefix)

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        return self.inner.list_dir(prefix)

    def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        return self.inner.list_dir_entries(prefix)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


class ReadOnlyStore(WrapperStore):
    """`inner` read-only: every write and delete through it raises `ReadOnlyError`; its
    reads are `inner`'s, batches, range senders and inline reads too, so a wrapper below
    (counting requests and batches) sees them as its own."""

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def stream_versioned_values(
        self, requests: Sequence[RangeRequest]
    ) -> AbstractAsyncContextManager[Any]:
        return self.inner.stream_versioned_values(requests)

    def range_sender(self) -> RangeSender | None:
        return self.inner.range_sender()

    @property
    def read_only(self) -> bool:
        return True

    def get_inline(self, key: str, byte_range: ByteRange | None = None) -> Versioned | None:
        return self.inner.get_inline(key, byte_range)

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable(key)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        self._check_writable(key)

    async def delete(self, key: str) -> None:
        self._check_writable(key)

    async def delete_if(self, key: str, expected: Version) -> None:
        self._check_writable(key)

    def __eq__(self, other: object) -> bool:  # two opens in mode "r" read as one store
        return isinstance(other, ReadOnlyStore) and other.inner == self.inner

    def __hash__(self) -> int:
        return hash((ReadOnlyStore, self.inner))


def read_only_view(store: Store) -> Store:
    """`store` read-only, over the same data: itself when it is, else a `ReadOnlyStore`
    over it (not its `with_read_only` copy: a wrapper's copy would count apart, and a
    subclass's constructor may take other arguments)."""
    return store if store.read_only else ReadOnlyStore(store)
