"""`MemoryStore`: a dict of key -> bytes, for tests and scratch arrays."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import AsyncIterator, MutableMapping
from dataclasses import replace
from typing import Any

from aiozarr import fork_safe
from aiozarr.byte_range import ByteRange
from aiozarr.errors import VersionConflictError
from aiozarr.storage.backends import in_process
from aiozarr.storage.policy.backend import NumberedVersion
from aiozarr.storage.protocol import (
    Buffer,
    Capabilities,
    Store,
    Version,
    Versioned,
    check_key,
    check_size,
    dir_entries,
)

__all__ = ["MemoryStore"]

# Write numbers: every value stored by any MemoryStore gets a new one (its version).
_writes = itertools.count(1)


class _Versions:
    """The write numbers of one dict's values and the lock of its conditional writes,
    shared by every store over that dict: a store of its own over a shared dict kept,
    for a key another store rewrote, the number it had written itself, so a shard index
    read before the rewrite matched the new bytes (wrong ranges decoded) and conditional
    writes through the two stores did not exclude each other."""

    __slots__ = ("__weakref__", "data", "lock", "numbers")

    def __init__(self, data: MutableMapping[str, Buffer]) -> None:
        self.data = data  # held: its id names this table while the table lives
        self.numbers: dict[str, int] = {}
        # released in a forked child: a parent thread's write may hold it at fork time
        self.lock = fork_safe.lock()


_tables: weakref.WeakValueDictionary[int, _Versions] = weakref.WeakValueDictionary()
_tables_lock = fork_safe.lock()


def _versions_of(data: MutableMapping[str, Buffer]) -> _Versions:
    """The table of `data`'s write numbers, shared by the stores over it that live."""
    with _tables_lock:
        table = _tables.get(id(data))
        if table is None or table.data is not data:
            table = _tables[id(data)] = _Versions(data)
        return table


_ELSEWHERE = (
    "a read-only copy made by unpickling {what} where that store is not (another "
    "process, or after it was gone): memory stores live in one process, so writes "
    "through a copy would be lost; use dask's threaded scheduler, or a local or object "
    "store"
)


class MemoryStore(Store):
    """Values in a dict, keyed by store key. Range reads are zero-copy memoryviews.

    Pass `data` to share a dict between stores (`with_read_only` shares it too); they
    share its values' versions and write lock too. Values are copied to `bytes` on
    `set`, so a caller may reuse its buffer afterwards.

    Each value written through a store has a version (its write number), kept beside
    the dict; a value put into `data` directly has none, so conditional writes and
    stale-index checks cannot see it change.

    A store lives in one process. Unpickled in the process that pickled it, it is that
    store again (`memory://NAME` by its name, any other while the original lives);
    anywhere else it is a read-only copy of the values, whose writes raise
    `ReadOnlyError` rather than vanish with the copy.
    """

    CAPABILITIES = Capabilities(
        conditional_writes=True,
        conditional_deletes=True,
        inline_reads=True,
        # One lookup serves every range of a value (`read_ranges`: slices, one by one).
        batched_reads=True,
        # Slicing memory costs nothing; merging ranges would only add work.
        coalesce_gap_bytes=0,
        sized_versions=True,  # a value's write number carries its size (`NumberedVersion`)
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass that changes how values are read (delays, faults) is read through
        # its `read`, never inline.
        if cls.read is not MemoryStore.read or cls.read_ranges is not MemoryStore.read_ranges:
            cls.CAPABILITIES = replace(cls.CAPABILITIES, inline_reads=False)

    def __init__(
        self,
        data: MutableMapping[str, Buffer] | None = None,
        *,
        read_only: bool = False,
        max_concurrency: int | None = None,
    ) -> None:
        super().__init__(read_only=read_only, max_concurrency=max_concurrency)
        self._data: MutableMapping[str, Buffer] = {} if data is None else data
        # Every store over this dict shares its write numbers and its writes' lock (a
        # conditional write's check and write are one step).
        table = _versions_of(self._data)
        self._table: _Versions | None = table  # held: the table lives while a store does
        self._versions, self._lock = table.numbers, table.lock
        self._name: str | None = None  # memory://NAME's name
        self._copy_of: str | None = None  # set on a copy unpickled away from its store
        self._serial: int | None = None  # set when first pickled (anonymous stores)

    @classmethod
    def named(cls, name: str) -> MemoryStore:
        """The store `memory://NAME` opens in this process (made on first use)."""

        def make() -> MemoryStore:
            store = cls()
            store._name = name
            return store

        return in_process.one_per_name(name, make)

    @property
    def data(self) -> MutableMapping[str, Buffer]:
        """The dict holding the values (shared, not a copy)."""
        return self._data

    def with_read_only(self, read_only: bool = True) -> MemoryStore:
        """A store over the same dict with another read-only flag."""
        other = type(self)(self._data, read_only=read_only, max_concurrency=self._max_concurrency)
        other._table, other._versions, other._lock = self._table, self._versions, self._lock
        other._name, other._copy_of = self._name, self._copy_of
        return other

    @property
    def writable(self) -> bool:
        return self._copy_of is None and super().writable

    # -- reads -------------------------------------------------------------------------

    def get_inline(self, key: str, byte_range: ByteRange | None = None) -> Versioned | None:
        """The value at `key` (or a zero-copy slice of it) and its version, on the
        calling thread."""
        check_key(key)
        value, data = self._slice(key, byte_range)
        # Read after the bytes: a writer sets the version first, so this one is at
        # least as new as the bytes (a stale pair can only look newer, never older).
        return None if data is None else (data, self._version(key, value))

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        value, data = self._slice(key, byte_range)
        if data is None:
            return None
        if byte_range is None:  # in memory already: the bound is the caller's contract
            check_size(key, memoryview(data).nbytes, max_bytes, self)
        return data, self._version(key, value)

    def _slice(self, key: str, byte_range: ByteRange | None) -> tuple[Buffer, Buffer | None]:
        """The value at `key` and the part of it asked for (None, None: missing)."""
        value = self._data.get(key)
        if value is None or byte_range is None:
            return value, value
        view = memoryview(value).cast("B")
        start, stop = byte_range.resolve(len(view))
        return value, view[start:stop]

    def _version(self, key: str, value: Buffer) -> NumberedVersion | None:
        """The version of `value`, read at `key`: its write number, with its size."""
        number = self._versions.get(key)
        return None if number is None else NumberedVersion(number, memoryview(value).nbytes)

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
        data = bytes(memoryview(value).cast("B"))
        with self._lock:
            self._store(key, data)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        """`set`, only if the value at `key` is still version `expected` (None: absent)."""
        self._check_writable(key)
        data = bytes(memoryview(value).cast("B"))
        with self._lock:
            self._check_version(key, expected)
            self._store(key, data)

    def _store(self, key: str, data: bytes) -> None:
        # Version first: a reader that sees the new bytes then sees the new version.
        self._versions[key] = next(_writes)
        self._data[key] = data

    def _check_version(self, key: str, expected: Version | None) -> None:
        if key in self._data:
            same = expected is not None and self._versions.get(key) == expected
        else:
            same = expected is None
        if not same:
            raise VersionConflictError(f"{key!r} in {self!r} is no longer the version read")

    async def delete(self, key: str) -> None:
        """Remove `key`; a missing key is fine."""
        self._check_writable(key)
        with self._lock:
            self._remove(key)

    async def delete_if(self, key: str, expected: Version) -> None:
        """`delete`, only if the value at `key` is still version `expected`."""
        self._check_writable(key)
        with self._lock:
            self._check_version(key, expected)
            self._remove(key)

    def _remove(self, key: str) -> None:
        self._data.pop(key, None)
        self._versions.pop(key, None)

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with `prefix`."""
        self._check_writable(prefix)
        with self._lock:
            for key in [k for k in self._data if k.startswith(prefix)]:
                self._remove(key)

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

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        """`(name, is_directory)` directly under `prefix`, sorted."""
        for entry in dir_entries(list(self._data), prefix):
            yield entry

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        if self._copy_of is not None:
            return f"MemoryStore(<{len(self._data)} keys: {_ELSEWHERE.format(what=self._copy_of)}>)"
        flag = ", read_only=True" if self._read_only else ""
        where = f"memory://{self._name}" if self._name is not None else f"at {id(self._data):#x}"
        return f"MemoryStore(<{len(self._data)} keys {where}>{flag})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MemoryStore)
            and type(other) is type(self)
            and other._data is self._data
            and other._read_only == self._read_only
        )

    def __hash__(self) -> int:
        return hash((type(self), id(self._data), self._read_only))

    def __reduce__(self) -> tuple[Any, ...]:
        # The values travel too: a copy in another process reads them.
        # A copy is never rejoined: it is not the store its values came from.
        ref = None if self._copy_of is not None else in_process.reference(self, self._name)
        return (_unpickled, (type(self), ref, self.__getstate__()))

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        del state["_lock"]  # a lock is this process's
        del state["_table"]  # (a copy's dict is its own: its numbers travel as `_versions`)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=fork_safe.lock(), _table=None)


def _unpickled(
    cls: type[MemoryStore], ref: in_process.Reference | None, state: dict[str, Any]
) -> MemoryStore:
    """The store a pickle names, where it lives; else a read-only copy of its values."""
    original: MemoryStore | None = None if ref is None else in_process.rejoin(ref)
    if original is not None:
        read_only = state["_read_only"]
        return original if original.read_only == read_only else original.with_read_only(read_only)
    copy = cls.__new__(cls)
    copy.__setstate__(state)
    if copy._copy_of is None:
        copy._copy_of = f"memory://{copy._name}" if copy._name else "an in-memory store"
    copy._read_only = True
    return copy
