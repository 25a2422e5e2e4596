"""`MemoryStore`: a dict of key -> bytes, for tests and scratch arrays."""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping, Sequence
from typing import Any

from aiozarr.byte_range import ByteRange
from aiozarr.storage.base import Buffer, Store, check_key

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """Values in a dict, keyed by store key. Range reads are zero-copy memoryviews.

    Pass `data` to share a dict between stores (`with_read_only` shares it too). Values
    are copied to `bytes` on `set`, so a caller may reuse its buffer afterwards.
    """

    # Slicing memory costs nothing; merging ranges would only add work.
    coalesce_gap_bytes = 0

    def __init__(
        self,
        data: MutableMapping[str, Buffer] | None = None,
        *,
        read_only: bool = False,
        max_concurrency: int | None = None,
    ) -> None:
        super().__init__(read_only=read_only, max_concurrency=max_concurrency)
        self._data: MutableMapping[str, Buffer] = {} if data is None else data

    @property
    def data(self) -> MutableMapping[str, Buffer]:
        """The dict holding the values (shared, not a copy)."""
        return self._data

    def with_read_only(self, read_only: bool = True) -> MemoryStore:
        """A store over the same dict with another read-only flag."""
        return type(self)(self._data, read_only=read_only, max_concurrency=self._max_concurrency)

    # -- reads -------------------------------------------------------------------------

    @property
    def reads_inline(self) -> bool:
        # A subclass that changes how values are read (delays, faults) is read through it.
        return type(self)._get is MemoryStore._get

    def get_inline(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        """The value at `key` (or a zero-copy slice of it), on the calling thread."""
        check_key(key)
        return self._slice(key, byte_range)

    async def _get(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        return self._slice(key, byte_range)

    def _slice(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        value = self._data.get(key)
        if value is None or byte_range is None:
            return value
        view = memoryview(value).cast("B")
        start, stop = byte_range.resolve(len(view))
        return view[start:stop]

    async def _get_ranges(self, key: str, byte_ranges: Sequence[ByteRange]) -> list[Buffer] | None:
        """Slices of one value, one after another: no tasks needed for memory."""
        out: list[Buffer] = []
        for byte_range in byte_ranges:
            data = await self._get(key, byte_range)
            if data is None:
                return None
            out.append(data)
        return out

    async def exists(self, key: str) -> bool:
        """Whether `key` is in the dict."""
        check_key(key)
        return key in self._data

    async def getsize(self, key: str) -> int | None:
        """Size of the value at `key` in bytes, or None if missing."""
        value = self._data.get(key)
        return None if value is None else memoryview(value).nbytes

    # -- writes ------------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        """Store a copy of `value` at `key` (no copy when it is already `bytes`)."""
        self._check_writable(key)
        self._data[key] = bytes(memoryview(value).cast("B"))

    async def delete(self, key: str) -> None:
        """Remove `key`; a missing key is fine."""
        self._check_writable(key)
        self._data.pop(key, None)

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with `prefix`."""
        self._check_writable(prefix)
        for key in [k for k in self._data if k.startswith(prefix)]:
            del self._data[key]

    # -- listing -----------------------------------------------------------------------

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every key starting with `prefix`, sorted."""
        for key in sorted(k for k in self._data if k.startswith(prefix)):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """Names of the keys and "directories" directly under `prefix`, sorted."""
        head = prefix.rstrip("/") + "/" if prefix.strip("/") else ""
        names = {k[len(head) :].split("/", 1)[0] for k in self._data if k.startswith(head)}
        for name in sorted(names - {""}):
            yield name

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        flag = ", read_only=True" if self._read_only else ""
        return f"MemoryStore(<{len(self._data)} keys at {id(self._data):#x}>{flag})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MemoryStore)
            and type(other) is type(self)
            and other._data is self._data
            and other._read_only == self._read_only
        )

    def __hash__(self) -> int:
        return hash((type(self), id(self._data), self._read_only))

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_limiter"] = None  # a limiter belongs to one process's event loop
        return state
