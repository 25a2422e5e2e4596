"""`ZarrStore`: any zarr-python 3 store (`zarr.abc.store.Store`) as an aiozarr `Store`.

One adapter brings zarr-python's `LocalStore`, `MemoryStore`, `FsspecStore`,
`ObjectStore` and `ZipStore`, and icechunk's sessions' stores, to every aiozarr call that
takes a store. aiozarr's primitives are implemented on the zarr store's async API:
`read` is `get(key, prototype, byte_range)`, and the coalesced ranges of one key (what
the engine's batches become, `Store.read_ranges`) are ONE `get_partial_values` call, so
a zarr store that reads many ranges at once (fsspec's `cat_ranges`, obstore's
`get_ranges`) still does. zarr is never imported by this module at `import aiozarr`:
the names it needs are imported when a zarr store is wrapped (`is_zarr_store` looks in
`sys.modules`, since a caller holding a zarr store has imported zarr).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import AsyncIterator, Hashable, Iterator, Sequence
from pathlib import PurePath
from typing import Any

import numpy as np

from aiozarr.byte_range import ByteRange
from aiozarr.errors import AiozarrError, DeleteUnsupportedError, ReadOnlyError, StoreError
from aiozarr.storage.backends import in_process
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.protocol import Buffer, Capabilities, Store, Version, Versioned, check_size

__all__ = ["ZarrStore", "is_zarr_store"]


def is_zarr_store(obj: Any) -> bool:
    """Whether `obj` is a zarr-python 3 store (without importing zarr): by its type, so
    a stand-in that only claims to be one (a mock made with `spec=`) is not."""
    module = sys.modules.get("zarr.abc.store")
    return module is not None and issubclass(type(obj), module.Store)


def _byte_request(byte_range: ByteRange | None) -> Any:
    """aiozarr's `ByteRange` as zarr-python's `ByteRequest`."""
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    if byte_range is None:
        return None
    if byte_range.suffix is not None:
        return SuffixByteRequest(byte_range.suffix)
    if byte_range.length is None:
        return OffsetByteRequest(byte_range.offset)
    return RangeByteRequest(byte_range.offset, byte_range.offset + byte_range.length)


def _bytes_of(buffer: Any) -> Buffer | None:
    """The bytes of a zarr `Buffer` without a copy (a uint8 numpy array)."""
    return None if buffer is None else np.asarray(buffer.as_numpy_array()).view(np.uint8)


class ZarrStore(Store):
    """A zarr-python 3 store (`zarr.storage.LocalStore(...)`, an icechunk session's
    `store`, ...) seen as an aiozarr store. Its read-only flag is the zarr store's."""

    # One call of the zarr store serves every range of a value: `read_ranges`.
    CAPABILITIES = Capabilities(batched_reads=True)

    def __init__(
        self, store: Any, *, read_only: bool | None = None, max_concurrency: int | None = None
    ) -> None:
        if not is_zarr_store(store):
            raise AiozarrError(f"expected a zarr-python store, got {type(store).__name__}")
        flag = bool(store.read_only) if read_only is None else read_only
        super().__init__(read_only=flag, max_concurrency=max_concurrency)
        self._zarr = store
        self._capabilities = dataclasses.replace(
            self.CAPABILITIES,
            writes=bool(store.supports_writes),
            deletes=bool(store.supports_deletes),
            listing=bool(store.supports_listing),
            partial_reads=bool(getattr(store, "supports_partial_reads", True)),
        )

    @property
    def zarr_store(self) -> Any:
        """The wrapped zarr-python store."""
        return self._zarr

    @property
    def writable(self) -> bool:
        return not getattr(self, "_copied", False) and super().writable

    def _check_writable(self, key: str) -> None:
        if getattr(self, "_copied", False):
            raise ReadOnlyError(
                f"cannot write {key!r}: {self!r} is a copy of a zarr-python in-memory "
                "store unpickled away from it (another process, or a dask task): its writes "
                "would never reach the original; use a local or object store"
            )
        super()._check_writable(key)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # A zarr-python in-memory store pickles a copy of its dict: a dask task's writes
        # went to that copy and vanished. In this process the pickle finds the store
        # again; elsewhere it is a read-only copy whose writes raise.
        if getattr(self._zarr, "_store_dict", None) is None:
            return super().__reduce_ex__(protocol)
        ref = in_process.reference(self)
        return (_unpickled_memory, (ref, self._zarr))

    @property
    def capabilities(self) -> Capabilities:
        """What the zarr store says it supports (writes, deletes, listing, partial reads)."""
        return self._capabilities

    def with_read_only(self, read_only: bool = True) -> ZarrStore:
        if read_only == self._read_only:
            return self
        if not read_only and self._zarr.read_only:
            return ZarrStore(self._zarr.with_read_only(False), read_only=False)
        return ZarrStore(self._zarr, read_only=read_only)

    @staticmethod
    def _prototype() -> Any:
        from zarr.core.buffer import default_buffer_prototype

        return default_buffer_prototype()

    @contextlib.contextmanager
    def _errors(self, action: str, key: str) -> Iterator[None]:
        """The zarr store's own exceptions as `StoreError` naming the key."""
        try:
            yield
        except AiozarrError:
            raise
        except Exception as error:
            if action == "delete" and isinstance(error, NotImplementedError):
                # a zip asked to delete a key it holds
                raise DeleteUnsupportedError(
                    f"cannot delete {key!r} in {self!r}: the store cannot delete what it holds"
                ) from error
            raise StoreError(
                f"cannot {action} {key!r} in {self!r}: {type(error).__name__}: {error}"
            ) from error

    # -- reads -------------------------------------------------------------------------

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """`get` of the zarr store (a value over `max_bytes` is refused once read: zarr's
        stores tell no size first); no version."""
        with self._errors("read", key):
            try:
                found = await self._zarr.get(key, self._prototype(), _byte_request(byte_range))
            except FileNotFoundError:
                return None
            except Exception as error:
                if _refused_older_key(key, error):
                    return None
                raise
        data = _bytes_of(found)
        if data is None:
            return None
        if byte_range is None:
            check_size(key, memoryview(data).nbytes, max_bytes, self)
        return data, None

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        """Every range of `key` in one `get_partial_values` of the zarr store (a value
        over `max_bytes` is refused once read: zarr's stores tell no size first)."""
        requests = [(key, _byte_request(r)) for r in byte_ranges]
        with self._errors("read", key):
            try:
                found = await self._zarr.get_partial_values(self._prototype(), requests)
            except FileNotFoundError:
                return None
            except Exception as error:
                # icechunk's fails on a key with no value (a buffer of None) where its
                # get answers None: a key its store says is absent is missing
                if _refused_older_key(key, error) or await self._absent(key):
                    return None
                raise
        if not found or any(f is None for f in found):
            return None
        answers = [_bytes_of(f) for f in found]
        for byte_range, data in zip(byte_ranges, answers, strict=True):
            if byte_range is None:
                check_size(key, memoryview(data).nbytes, max_bytes, self)
        return answers, None

    async def _absent(self, key: str) -> bool:
        """Whether the zarr store says `key` holds no value (a failing check says
        nothing: False)."""
        try:
            return not await self._zarr.exists(key)
        except Exception:
            return False

    async def exists(self, key: str) -> bool:
        with self._errors("check", key):
            try:
                return bool(await self._zarr.exists(key))
            except Exception as error:
                if _refused_older_key(key, error):
                    return False
                raise

    async def getsize(self, key: str) -> int | None:
        with self._errors("stat", key):
            try:
                return int(await self._zarr.getsize(key))
            except FileNotFoundError:
                return None
            except Exception as error:
                if _refused_older_key(key, error):
                    return None
                raise

    # -- writes ------------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable(key)
        data = bytes(
            memoryview(
                np.ascontiguousarray(value) if isinstance(value, np.ndarray) else value
            ).cast("B")
        )
        buffer = self._prototype().buffer.from_bytes(data)
        with self._errors("write", key):
            await self._zarr.set(key, buffer)

    async def delete(self, key: str) -> None:
        """The zarr store's `delete`. One that cannot delete (a zip) is asked too: it
        refuses only a key it holds (`DeleteUnsupportedError`), as it does for zarr-python."""
        self._check_writable(key)
        with self._errors("delete", key), contextlib.suppress(FileNotFoundError, KeyError):
            await self._zarr.delete(key)

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every key that starts with `prefix`: under a directory (`"a/b/"`), the
        zarr store's own `delete_dir`, one call (icechunk deletes a node, and lists only
        the prefixes of nodes); any other prefix, the keys listed and deleted."""
        directory = prefix.rstrip("/")
        if not directory or not prefix.endswith("/"):
            await super().delete_prefix(prefix)
            return
        self._check_writable(prefix)
        with self._errors("delete", prefix):
            await self._zarr.delete_dir(directory)

    # -- listing -----------------------------------------------------------------------

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        # zarr's LocalStore lists a directory, not a string prefix: ask for the directory
        # the prefix ends in and keep the keys that start with it.
        directory = prefix.rpartition("/")[0]
        with self._errors("list", prefix):
            async for key in self._zarr.list_prefix(f"{directory}/" if directory else ""):
                if key.startswith(prefix):
                    yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        directory = prefix.rstrip("/")
        # zarr's LocalStore leaves empty directories behind when it deletes: a name
        # with no key below it is no child (as aiozarr's LocalStore lists it). Only for
        # stores of local directories, where asking costs no request.
        on_disk = isinstance(getattr(self._zarr, "root", None), PurePath)
        with self._errors("list", prefix):
            async for name in self._zarr.list_dir(directory):
                if on_disk and not await self._holds_keys(f"{directory}/{name}".lstrip("/")):
                    continue
                yield name

    async def _holds_keys(self, name: str) -> bool:
        """Whether `name` is a key or has a key below it."""
        if await self._zarr.exists(name):
            return True
        async for _ in self._zarr.list_prefix(f"{name}/"):
            return True
        return False

    # -- identity ----------------------------------------------------------------------

    def key_space(self) -> tuple[Hashable, str]:
        """A zarr-python `LocalStore`'s directory as aiozarr's `LocalStore` over it names
        it, so that a write through either drops what a chunk cache holds of reads
        through the other; any other zarr store is a space of its own (`Store.key_space`)."""
        from zarr.storage import LocalStore as ZarrLocalStore

        if isinstance(self._zarr, ZarrLocalStore):
            return LocalStore(self._zarr.root, read_only=True).key_space()
        return super().key_space()

    def __repr__(self) -> str:
        if getattr(self, "_copied", False):
            return (
                f"ZarrStore({self._zarr!r}: a read-only copy unpickled away from that "
                "in-memory store (another process), where writes would never reach it)"
            )
        return f"ZarrStore({self._zarr!r}{', read_only=True' if self._read_only else ''})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ZarrStore)
            and self._read_only == other._read_only
            and _same_place(self._zarr, other._zarr)
        )

    def __hash__(self) -> int:
        return hash((ZarrStore, type(self._zarr)))


#: The last segment of a v1 node's documents; the 2020 draft's folders of documents and chunks.
_V1_DOCUMENTS = ("meta", "attrs")
_DRAFT_ROOTS = ("meta/root", "data/root")
_V2_V3_DOCUMENTS = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")


def _unpickled_memory(ref: in_process.Reference, zarr_store: Any) -> ZarrStore:
    """The wrapped in-memory store a pickle names, where it lives; else a read-only copy."""
    original: ZarrStore | None = in_process.rejoin(ref)
    if original is not None:
        return original
    copy = ZarrStore(zarr_store, read_only=True)
    copy._copied = True
    return copy


def _refused_older_key(key: str, error: BaseException) -> bool:
    """Whether `error`, raised by a zarr-python store asked for `key`, only refuses a
    key of the layouts before Zarr v2/v3 (v1's `meta`/`attrs`, the draft's `meta/root`
    and `data/root`) that the store cannot hold: such a key is absent there (icechunk
    refuses them as "invalid zarr key format" where aiozarr looks for older nodes).
    Only an error saying the key is invalid is one: a failure of the store itself
    (its network, its credentials) must not read as a node that is not there."""
    if isinstance(error, AiozarrError | OSError | TimeoutError):
        return False
    if "invalid zarr key" not in str(error).lower():
        return False
    last = key.rpartition("/")[2]
    if last in _V2_V3_DOCUMENTS:
        return False
    return last in _V1_DOCUMENTS or any(
        key == root or key.startswith((f"{root}/", f"{root}.")) for root in _DRAFT_ROOTS
    )


def _same_place(one: Any, other: Any) -> bool:
    """Whether two zarr-python stores are one place (what aiozarr's caches key by). Its
    in-memory stores compare their contents: two of them are one place only when they
    hold one dict, or a cache filled through one would serve the other once they part."""
    if one is other:
        return True
    held = getattr(one, "_store_dict", None), getattr(other, "_store_dict", None)
    if held != (None, None):
        return held[0] is held[1] and bool(one == other)
    return bool(one == other)
