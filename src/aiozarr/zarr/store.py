"""`aiozarr.zarr.Store`: any aiozarr store, zarr-python store or URL as a zarr-python 3 store.

    import zarr, aiozarr.zarr
    store = aiozarr.zarr.Store("s3://bucket/data.zarr", storage_options={"region": ...})
    arr = zarr.open_array(store=store, path="temperature")

The opposite of `storage/backends/zarr_store.py` (a zarr store as an aiozarr store). Every call is
one of the aiozarr store's public calls, so zarr-python's reads run under aiozarr's
request policy (the shared request budget, retries, timeouts, hedging, the byte budget,
versions): `get` is `Store.get`, `get_partial_values` is ONE `Store.get_partial_values`
batch (ranges of one key coalesced, keys read concurrently, all answers of a key from one
version of it), listings are the aiozarr store's async iterators, handed on as they are
paged, and writes and deletes are its `set`, `set_many`, `delete` and `delete_prefix`.

zarr-python is imported by this module: `import aiozarr` never imports it (the package
`aiozarr.zarr` is imported only by whoever asks for it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Any

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.abc.store import Store as ZarrStoreABC
from zarr.core.buffer import Buffer, BufferPrototype

from aiozarr.api import resolve_store
from aiozarr.byte_range import ByteRange
from aiozarr.engine.entry import forget_deleted, forget_written
from aiozarr.errors import (
    AiozarrError,
    InvalidValueError,
    ReadOnlyError,
    StoreError,
    VersionConflictError,
)
from aiozarr.storage.protocol import RangeRequest
from aiozarr.storage.protocol import Store as AiozarrStore
from aiozarr.zarr.pipeline_stores import aiozarr_store_for

__all__ = ["ByteRequestError", "KeyNotFoundError", "ReadOnlyStoreError", "Store"]

# What zarr-python asks of a read-only store's writes (its store tests match this text).
_READ_ONLY = "store was opened in read-only mode and does not support writing"


class ReadOnlyStoreError(ReadOnlyError, ValueError):
    """A write or delete through a read-only `aiozarr.zarr.Store`: aiozarr's
    `ReadOnlyError`, and the `ValueError` zarr-python's stores raise there."""


class KeyNotFoundError(StoreError, FileNotFoundError):
    """`getsize` of a key with no value: the `FileNotFoundError` zarr-python expects."""


class ByteRequestError(AiozarrError, TypeError):
    """A byte range that is none of zarr-python's `RangeByteRequest`,
    `OffsetByteRequest` and `SuffixByteRequest`."""


def byte_range_of(key: str, request: ByteRequest | None) -> ByteRange | None:
    """zarr-python's byte request for `key` as aiozarr's `ByteRange` (None: all of it)."""
    if request is None:
        return None
    if isinstance(request, RangeByteRequest):
        if request.end < request.start:
            raise ByteRequestError(
                f"cannot read {key!r}: the byte range {request!r} ends before it starts"
            )
        return ByteRange.of(request.start, request.end - request.start)
    if isinstance(request, OffsetByteRequest):
        return ByteRange.from_offset(request.offset)
    if isinstance(request, SuffixByteRequest):
        return ByteRange.last(request.suffix)
    raise ByteRequestError(
        f"Unexpected byte_range, got {request!r} for {key!r}: expected None, "
        "RangeByteRequest, OffsetByteRequest or SuffixByteRequest"
    )


def _with_flag(store: AiozarrStore, read_only: bool) -> AiozarrStore:
    """`store` with the read-only flag asked for, where it can change it (where it
    cannot, a read-only `Store` refuses the writes itself)."""
    if store.read_only == read_only:
        return store
    try:
        return store.with_read_only(read_only)
    except NotImplementedError:
        return store


class Store(ZarrStoreABC):
    """A zarr-python store (`zarr.abc.store.Store`) over an aiozarr store or a URL.

    `url_or_store`: a URL or path (`s3://`, `gs://`, `az://`, `http(s)://`, a local
    directory, `memory://NAME`, a `.zip`, kerchunk references (a `.json` file, a
    directory of Parquet ones, `reference://...`): opened with `storage_options` as
    `aiozarr.open_*` opens them), an aiozarr store (`aiozarr.storage.LocalStore(...)`, an
    `ObjectStore`, a `CountingStore` around one, ...), used as it is, or a zarr-python
    store (an icechunk session's `store`, zarr's `FsspecStore`, ...), read and written
    through aiozarr's request policy and batching (`aiozarr_store`: zarr's `LocalStore`
    and obstore-backed `ObjectStore` as aiozarr's own stores over the same objects, any
    other through its own API: `aiozarr.storage.backends.zarr_store.ZarrStore`).

    `read_only`: writes and deletes raise `ReadOnlyStoreError` (a `ValueError`, as
    zarr-python's stores raise). A store that cannot write at all (plain HTTP, a zip
    archive opened to read, a read-only zarr store) is read-only whatever is asked.

    Equal stores are stores over equal aiozarr stores (or the same URL and options) with
    the same flag; a pickled store opens its URL again (a `memory://` one, in another
    process, is empty) or carries its aiozarr store as that store pickles.
    """

    # Found by pickle and named in reprs where users import it from.
    __module__ = "aiozarr.zarr"

    def __init__(
        self,
        url_or_store: str | os.PathLike[str] | AiozarrStore | ZarrStoreABC,
        *,
        storage_options: Mapping[str, Any] | None = None,
        read_only: bool = False,
    ) -> None:
        self._url: str | None = None
        self._options: dict[str, Any] = {}
        if isinstance(url_or_store, str | os.PathLike):
            self._url = os.fspath(url_or_store)
            self._options = dict(storage_options or {})
            inner = _open(self._url, self._options, read_only)
        else:
            inner = _store_of(url_or_store, read_only)
            if storage_options:
                raise InvalidValueError(
                    f"storage_options {sorted(storage_options)} given with the store "
                    f"{url_or_store!r}: they are for a URL; pass them to the store instead"
                )
        super().__init__(read_only=read_only or not inner.writable)
        self._store = inner

    @property
    def aiozarr_store(self) -> AiozarrStore:
        """The aiozarr store every call goes to (what `aiozarr.zarr.CodecPipeline`
        reads and writes through)."""
        return self._store

    def with_read_only(self, read_only: bool = False) -> Store:
        """A new store (not yet open) over the same data with another read-only flag:
        over this store's aiozarr store (a zip archive being written is read as written
        so far, not from its unfinished file). A store opened from a URL keeps the URL
        (it pickles as it), and is opened again where it must write and cannot here."""
        if self._url is not None and not (read_only or self._store.writable):
            return type(self)(self._url, storage_options=self._options, read_only=False)
        other = type(self)(self._store, read_only=read_only)
        other._url, other._options = self._url, self._options
        return other

    # -- capabilities ------------------------------------------------------------------

    @property
    def supports_writes(self) -> bool:
        return self._store.capabilities.writes

    @property
    def supports_deletes(self) -> bool:
        return self._store.capabilities.deletes

    @property
    def supports_listing(self) -> bool:
        return self._store.listable

    # -- reads -------------------------------------------------------------------------

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        """The value at `key` (or the bytes of it in `byte_range`), None if missing: one
        read under the aiozarr store's request policy."""
        data = await self._store.get(key, byte_range_of(key, byte_range))
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        """The answers to many reads, in order (None where missing), as ONE aiozarr
        batch: ranges of one key are coalesced into as few requests as the store's
        settings allow, keys are read concurrently under its request budget, and every
        answer of one key comes from one version of its value."""
        requests = [RangeRequest(key, byte_range_of(key, r)) for key, r in key_ranges]
        if not requests:
            return []
        answers = await self._store.get_partial_values(requests)
        wrap = prototype.buffer.from_bytes
        return [None if data is None else wrap(data) for data in answers]

    async def _get_many(
        self, requests: Iterable[tuple[str, BufferPrototype, ByteRequest | None]]
    ) -> AsyncGenerator[tuple[str, Buffer | None], None]:
        """`(key, value)` for many reads, made as one batch (`get_partial_values`)."""
        items = list(requests)
        batch = [RangeRequest(key, byte_range_of(key, r)) for key, _, r in items]
        answers = await self._store.get_partial_values(batch) if batch else []
        for (key, prototype, _), data in zip(items, answers, strict=True):
            yield key, None if data is None else prototype.buffer.from_bytes(data)

    async def exists(self, key: str) -> bool:
        return await self._store.exists(key)

    async def getsize(self, key: str) -> int:
        """The size of the value at `key` in bytes (`KeyNotFoundError` if missing)."""
        size = await self._store.getsize(key)
        if size is None:
            raise KeyNotFoundError(f"cannot tell the size of {key!r}: no value is stored there")
        return size

    # -- writes ------------------------------------------------------------------------

    def _check_writes(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyStoreError(f"cannot write {key!r}: {_READ_ONLY} ({self!r})")

    async def set(self, key: str, value: Buffer) -> None:
        """Store `value` at `key` (the aiozarr store's `set`: atomic where it can be)."""
        self._check_writes(key)
        try:
            await self._store.set(key, _bytes_of(key, value))
        finally:  # a failed write may have written it still
            self._forget_cached(key)

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        """Store `value` at `key` unless a value is there: a conditional write where the
        aiozarr store has them (`set_if`), else a check and a write."""
        self._check_writes(key)
        capabilities = self._store.capabilities
        if capabilities.conditional_writes:
            # A server may ignore the condition (conditions.py): look first there too.
            if capabilities.conditions_from_server and await self._store.exists(key):
                return
            with contextlib.suppress(VersionConflictError):
                await self._store.set_if(key, _bytes_of(key, value), None)
                self._forget_cached(key)
        elif not await self._store.exists(key):
            await self.set(key, value)

    async def _set_many(self, values: Iterable[tuple[str, Buffer]]) -> None:
        """Store many values concurrently, under the aiozarr store's request budget."""
        items = [(key, _bytes_of(key, value)) for key, value in values]
        if items:
            self._check_writes(items[0][0])
            try:
                await self._store.set_many(items)
            finally:
                self._forget_cached(*(key for key, _ in items))

    async def delete(self, key: str) -> None:
        """Remove `key` (a missing key is not an error)."""
        self._check_writes(key)
        try:
            await self._store.delete(key)
        finally:
            self._forget_cached(key)

    async def delete_dir(self, prefix: str) -> None:
        """Remove every key under the directory `prefix` ("" for all), concurrently."""
        if not (self.supports_deletes and self.supports_listing):
            raise NotImplementedError(f"{self!r} cannot list and delete {prefix!r}")
        self._check_writes(prefix)
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        try:
            await self._store.delete_prefix(prefix)
        finally:
            forget_deleted(self._store, prefix)

    def _forget_cached(self, *keys: str) -> None:
        """`keys` were just written or deleted: every chunk cache drops what it held of
        them, as aiozarr's own writes make it do (another handle over the same data must
        not serve what they replaced)."""
        forget_written(self._store, keys)

    # -- listing -----------------------------------------------------------------------

    def list(self) -> AsyncIterator[str]:
        """Every key, as the aiozarr store lists them (page by page)."""
        return self._store.list_prefix("")

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every key under the directory `prefix`, as zarr-python's `LocalStore` and
        `ObjectStore` list: `"a"` lists `a/...`, not `ab/...` (zarr-python's
        `nchunks_initialized` lists an array's path so and takes every key for its own)."""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return self._store.list_prefix(prefix)

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """The names (keys and directories) directly under the directory `prefix`."""
        return self._store.list_dir(prefix.rstrip("/"))

    async def is_empty(self, prefix: str) -> bool:
        """Whether no key lies under the directory `prefix` (one page of a listing)."""
        if not self.supports_listing:
            raise NotImplementedError(f"{self!r} cannot list")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys = self._store.list_prefix(prefix)
        try:
            async for _ in keys:
                return False
            return True
        finally:
            close = getattr(keys, "aclose", None)
            if close is not None:
                await close()

    def close(self) -> None:
        """Close the store and the aiozarr store underneath where it can be closed (a
        zip archive: its central directory is written, as zarr-python's `ZipStore`
        does on `close()` and at the end of a `with` block)."""
        close = getattr(self._store, "close", None)
        if callable(close):
            close()
        super().close()

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        flag = ", read_only=True" if self.read_only else ""
        return f"aiozarr.zarr.Store({self._store!r}{flag})"

    def __str__(self) -> str:
        return self._url if self._url is not None else repr(self._store)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Store) or other.read_only != self.read_only:
            return False
        if self._url is not None and (other._url, other._options) == (self._url, self._options):
            return True
        return self._store is other._store or bool(self._store == other._store)

    __hash__ = None  # type: ignore[assignment]  # as zarr-python's stores: equal by value

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        # Opened again from its URL, but a memory store, which pickles itself: the same
        # store in this process, a read-only copy in another (reopened, an empty one).
        if self._url is not None and not self._url.startswith("memory://"):
            state["_store"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._store is None:
            assert self._url is not None
            options, read_only = self._options, self._read_only
            self._store = _open(self._url, options, read_only)


def _bytes_of(key: str, value: Any) -> Any:
    """A zarr `Buffer`'s bytes without a copy (its numpy array, for host buffers)."""
    if not isinstance(value, Buffer):
        raise InvalidValueError(
            f"cannot write {key!r}: expected a zarr Buffer, got {type(value).__name__}"
        )
    return value.as_buffer_like()


def _open(url: str, options: Mapping[str, Any], read_only: bool) -> AiozarrStore:
    """The store a URL or path names, opened as `aiozarr.open_*` opens it (kerchunk
    references and zip archives included)."""
    return resolve_store(url, mode="r" if read_only else "a", storage_options=options)


def _store_of(store: Any, read_only: bool) -> AiozarrStore:
    """The aiozarr store every call goes to: an aiozarr store as it is (with the flag
    asked for, where it can change it); for a zarr-python store, the one the codec
    pipeline reads it through (`pipeline_stores.py`), read-only where asked or where the
    zarr store is."""
    if isinstance(store, AiozarrStore):
        return _with_flag(store, read_only)
    inner = aiozarr_store_for(store) if isinstance(store, ZarrStoreABC) else None
    if inner is None:
        raise InvalidValueError(
            "aiozarr.zarr.Store takes a URL, a path, an aiozarr store or a zarr-python "
            f"store, got {type(store).__name__}"
        )
    return _with_flag(inner, True) if read_only and not inner.read_only else inner
