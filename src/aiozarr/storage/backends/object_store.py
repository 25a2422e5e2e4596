"""`ObjectStore`: a `Store` over any obstore store (S3, GCS, Azure, HTTP, local, memory).

Each coalesced range of a key is one GET (`obstore.get_async` with a range) under the
base class's request policy: a budget slot, a timeout, retries of that range, hedging.
Suffix reads (shard indexes) are one GET with `Range: bytes=-N`, never a HEAD first.
Answers are obstore `Bytes`, handed on without a copy; a short answer is told clipped
or cut from the size and range it carries (cut: `ShortReadError`, retried), and its
version is its ETag (and version id). A server found to ignore ranges is read whole,
once per batch for all the ranges of a value (`storage/policy/whole_reads.py`).
obstore's own retries are off (rebuilt with `max_retries: 0`): aiozarr's policy is the
only one. Conditional writes are PUTs with `If-Match` / `If-None-Match: *`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import anyio
import obstore
from obstore.exceptions import AlreadyExistsError, NotFoundError, PreconditionError
from obstore.exceptions import BaseError as ObstoreError
from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store

from aiozarr.byte_range import ByteRange
from aiozarr.errors import (
    StoreError,
    ValueTooLargeError,
    VersionConflictError,
    WriteOutcomeUnknownError,
)
from aiozarr.sizes import memory_bytes
from aiozarr.storage.backends import (
    credentials,
    obstore_errors,
    obstore_exit,  # noqa: F401 (registers the wait at exit: obstore's threads leave Python)
)
from aiozarr.storage.backends.object_listing import ObjectListing
from aiozarr.storage.backends.object_naming import data_named, describe, missing_bucket, server
from aiozarr.storage.backends.object_ranges import (
    RangeSend,
    answer_of,
    check_encoding,
    checked_body,
    http_version,
    range_options,
)
from aiozarr.storage.backends.object_revalidation import read_if_changed
from aiozarr.storage.backends.obstore_client import from_pickle, without_retries
from aiozarr.storage.backends.obstore_fork import check_not_forked
from aiozarr.storage.policy.backend import ObjectVersion, RangeListener
from aiozarr.storage.policy.retry import ShortReadError, TransientStoreError, answer_began
from aiozarr.storage.policy.shaping import RequestShape
from aiozarr.storage.protocol import (
    Buffer,
    Capabilities,
    Store,
    Version,
    Versioned,
    check_key,
    check_size,
)

__all__ = ["ObjectStore"]

# obstore's S3 bulk delete takes up to 1000 keys per request.
_DELETE_BATCH = 1000
_SUFFIX_TRIES = 3  # an Azure suffix read whose blob changed under it (`_azure_suffix`)


def _capabilities_of(store: Any) -> Capabilities:
    """What an `ObjectStore` over obstore's `store` can do: S3 (obstore's default
    `conditional_put: etag`), GCS and Azure take If-Match / If-None-Match on PUT, which a
    probe checks the server honours (storage/protocol/write_conditions.py); HTTP cannot list."""
    cond = isinstance(store, S3Store | GCSStore | AzureStore)
    listing = not isinstance(store, HTTPStore)
    caps = ObjectStore.CAPABILITIES
    return dataclasses.replace(
        caps, listing=listing, conditional_writes=cond, conditions_from_server=cond
    )


def _version(meta: Any) -> Version | None:
    """An answer's version: its ETag and version id (None when it carries neither), with
    the object's size beside."""
    e_tag, version = meta.get("e_tag"), meta.get("version")
    if e_tag is None and version is None:
        return None
    return ObjectVersion(e_tag, version, meta.get("last_modified"), meta.get("size"))


class ObjectStore(ObjectListing, Store):
    """A `Store` over an obstore store.

        ObjectStore(obstore.store.S3Store("bucket", prefix="data.zarr", region="us-west-2"))

    Missing keys read as None; every other backend failure raises `StoreError` naming
    the key, the backend (never its credentials) and the backend's message. `HTTPStore`
    cannot list. The wrapper pickles when the obstore store does (all built-in remote
    stores do, unless given a credential provider that does not pickle).

    Requests are retried by aiozarr's policy (`retry_*`), never by obstore (see
    `without_retries`); slow reads are hedged (tail latency is the network's).

    `prefix` roots the store's keys below a prefix of the obstore store's, so that stores
    of one bucket share one obstore client, and with it its connections (`from_url`).
    """

    _version_of = staticmethod(_version)  # an answer's meta -> its version
    read_if_changed = read_if_changed  # a GET with If-None-Match: a 304 moves no bytes
    # An answer's version carries the object's size (`ObjectVersion`).
    CAPABILITIES = Capabilities(hedge_reads=True, sized_versions=True)

    def __init__(
        self,
        store: Any,
        *,
        read_only: bool = False,
        max_concurrency: int | None = None,
        prefix: str = "",
    ) -> None:
        super().__init__(read_only=read_only, max_concurrency=max_concurrency)
        self._store = without_retries(store)
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._hash: int | None = None
        self._capabilities = _capabilities_of(self._store)
        self._http = isinstance(self._store, HTTPStore)  # answers: `check_encoding`
        if self._http and type(self)._version_of is _version:
            self._version_of = http_version  # strong validators only
        # Once its server is found to ignore ranges: the ranges of a key in a batch are
        # one read (`read_ranges`, slices of one whole read).
        self._whole = dataclasses.replace(self._capabilities, batched_reads=True)

    @property
    def obstore(self) -> Any:
        """The wrapped obstore store."""
        return self._store

    @property
    def prefix(self) -> str:
        """What this store's keys are below in the obstore store ("" or ending in "/")."""
        return self._prefix

    @property
    def _where(self) -> str:
        """Where this store points, in words (`describe`)."""
        return describe(self._store, self._prefix)

    @property
    def capabilities(self) -> Capabilities:
        return self._whole if self.runtime.whole_reads.ignored else self._capabilities

    def key_space(self) -> tuple[Hashable, str]:
        """The bucket (container) and its server, not how requests are signed
        (`object_naming.data_named`), and this store's prefix in it."""
        config = getattr(self._store, "config", None)
        named = data_named(self._store, config) if isinstance(config, Mapping) else None
        if named is None:
            return super().key_space()  # an HTTP or a local obstore store
        prefix = str(getattr(self._store, "prefix", None) or "").strip("/")
        return named, (prefix + "/" if prefix else "") + self._prefix

    def with_read_only(self, read_only: bool = True) -> ObjectStore:
        """A store over the same data with another flag, sharing this one's request budget."""
        other = ObjectStore(
            self._store,
            read_only=read_only,
            max_concurrency=self._max_concurrency,
            prefix=self._prefix,
        )
        other._runtime = self._runtime
        return other

    # -- errors ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _errors(self, action: str, key: str) -> Iterator[None]:
        """Turn backend failures into `StoreError`; a missing key passes through, but
        not from a write, where a 404 is the server's refusal, not an absent value."""
        check_not_forked(action, key)
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            failure = obstore_errors.classify(exc)
            # A plain HTTP server has no buckets: its 404 is a missing key, whatever its
            # body says (the emulator's names the bucket, the first segment of the path).
            no_bucket = failure.missing_bucket and not self._http
            if failure.not_found and not no_bucket and action != "write":
                raise
            if not isinstance(exc, ObstoreError | OSError | ValueError | RuntimeError):
                raise
            if no_bucket:  # the cause in words; the server's text stays in __cause__
                raise StoreError(f"cannot {action} {key!r}: {missing_bucket(self._store)}") from exc
            if failure.credential_url:  # not the bucket's answer: obstore's credential fetch
                why = credentials.fetch_failed(self._store, failure.credential_url, failure.message)
                raise StoreError(f"cannot {action} {key!r} in {self._where}: {why}") from exc
            if failure.denied and isinstance(self._store, S3Store | GCSStore | AzureStore):
                # Say whether it went unsigned, and how to give credentials.
                why = credentials.refusal(self._store, action, failure.denied, failure.said)
                raise StoreError(f"cannot {action} {key!r} in {self._where}: {why}") from exc
            if failure.refused:  # obstore says "error sending request"; the dump says why
                raise StoreError(
                    f"cannot {action} {key!r} in {self._where}: connection refused: "
                    f"nothing listens at {server(self._store)}"
                ) from exc
            raise StoreError(
                f"cannot {action} {key!r} in {self._where}: {failure.message}"
            ) from exc

    # -- reads -------------------------------------------------------------------------

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """One GET (a range or all of `key`); a whole value over `max_bytes` is refused
        from its headers, its body unread."""
        try:
            with self._errors("read", key):
                return await self._fetch(key, byte_range, max_bytes)
        except Exception as exc:
            return await self._read_failed(key, byte_range, max_bytes, exc)

    async def _read_failed(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None, exc: Exception
    ) -> Versioned | None:
        """What a read whose GET failed with `exc` (as `_errors` put it) answers, or
        raises."""
        if obstore_errors.is_not_found(exc):
            return None
        cause = (
            obstore_errors.classify(exc.__cause__)
            if isinstance(exc.__cause__, ObstoreError)
            else None
        )
        if cause is not None and cause.bad_range and byte_range is None:
            raise StoreError(
                f"cannot read {key!r}: the server refused a GET of the whole value as a "
                f"range it cannot satisfy (416; asked no range): {cause.message}"
            ) from exc
        if cause is not None and cause.bad_range:  # nothing there: a clipped read
            return await self._past_end(key, byte_range)
        if cause is not None and cause.not_partial and byte_range is not None:
            # The whole value came (refused unread): read whole, once for every range.
            answer = await self._ranges_of_whole(key, [byte_range], max_bytes)
            return None if answer is None else (answer[0][0], answer[1])
        if cause is not None and cause.short_range:
            raise ShortReadError(
                f"cannot read {key!r}: {byte_range} answered with fewer bytes than "
                f"asked ({cause.message})"
            ) from exc
        raise exc

    async def _past_end(self, key: str, byte_range: ByteRange | None) -> Versioned | None:
        """The empty answer to a range that starts past the end of `key`, with the
        version a HEAD finds: compared with the version of the key's other answers, so
        that a value replaced by a longer one between them is read again, not cut."""
        try:
            with self._errors("stat", key):
                meta = await obstore.head_async(self._store, self._path(key))
        except Exception as exc:
            if obstore_errors.is_not_found(exc):
                return None
            raise
        start = 0 if byte_range is None or byte_range.suffix is not None else byte_range.offset
        if meta["size"] > start:  # it grew since: this range has bytes now
            raise ShortReadError(f"cannot read {key!r}: replaced while {byte_range} was read")
        return memoryview(b""), self._version_of(meta)

    def _range_answer(
        self, key: str, byte_range: ByteRange, result: Any, data: Buffer
    ) -> Versioned:
        if self._http:
            check_encoding(key, result)
        return answer_of(key, byte_range, result, data, self._version_of)

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        """Ranges of `key` from one read: read only once the server is found to ignore
        ranges (`capabilities.batched_reads`), so one whole read serves them all."""
        if not self.runtime.whole_reads.ignored:
            return await super().read_ranges(key, byte_ranges, max_bytes)
        return await self._ranges_of_whole(key, byte_ranges, max_bytes)

    async def _ranges_of_whole(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        """`byte_ranges` of `key` sliced from one whole read (`storage/policy/whole_reads.py`)."""
        runtime = self.runtime
        return await runtime.whole_reads.slices(
            self._whole_read_name(key),
            byte_ranges,
            lambda: self.read(key, None, max_bytes),
            runtime.statistics,
        )

    def _whole_read_name(self, key: str) -> Hashable:
        """The name under which whole reads of `key` share one GET (equal names only)."""
        return key

    async def _body(self, key: str, result: Any, skip: int, max_bytes: int | None) -> Buffer:
        """The body of a whole-value (or offset-to-end, from `skip`) GET whose headers have
        come, read only if the size they announce is one the caller takes: at most
        `max_bytes` (None: the memory this process may use).

        obstore's `bytes_async` allocates the announced size at once, so a server that
        announces `Content-Length: 10**12` aborted the process instead of raising.
        Bounded ranges need no check here: obstore refuses an answer whose range is not
        the one asked for ("Requested 0..10, got 0..1000000000000").
        """
        if self._http:
            check_encoding(key, result)
        announced = int(result.meta["size"]) - skip
        if max_bytes is not None:
            check_size(key, announced, max_bytes, self)
        elif announced > memory_bytes():
            raise ValueTooLargeError(
                f"cannot read {key!r} in {self!r}: the answer announces {announced} bytes, "
                f"more than the {memory_bytes()} of memory this process may use; it was "
                "not read"
            )
        return await result.bytes_async()

    async def _get(self, key: str, options: Any = None) -> Any:
        """One GET with obstore's `options` (a range)."""
        try:
            return await self._get_future(key, options)
        except Exception as exc:
            error = self._get_error(key, exc)
            if error is exc:
                raise
            raise error from exc

    def _get_future(self, key: str, options: Any) -> Any:
        """A GET sent, as obstore's future of its headers."""
        return obstore.get_async(self._store, self._path(key), options=options)

    def _get_error(self, key: str, exc: BaseException) -> BaseException:
        """What a failed GET raises: `exc`, unless a subclass says it means more."""
        return exc

    async def _fetch(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None = None
    ) -> Versioned:
        if byte_range is not None and 0 in (byte_range.length, byte_range.suffix):
            meta = await obstore.head_async(self._store, self._path(key))  # HTTP asks no 0
            return memoryview(b""), self._version_of(meta)
        suffix = None if byte_range is None else byte_range.suffix
        if suffix is not None and isinstance(self._store, AzureStore):
            return await self._azure_suffix(key, suffix)
        result = await self._get(key, range_options(byte_range))
        answer_began()
        return await self._answer(key, byte_range, result, max_bytes)

    async def _answer(
        self, key: str, byte_range: ByteRange | None, result: Any, max_bytes: int | None
    ) -> Versioned:
        """The bytes and version of a GET of `byte_range` whose headers have come."""
        if byte_range is None:
            return await self._body(key, result, 0, max_bytes), self._version_of(result.meta)
        if byte_range.length is None and byte_range.suffix is None:  # offset to the end
            data = await self._body(key, result, byte_range.offset, None)
            return checked_body(key, byte_range, result, data), self._version_of(result.meta)
        return self._range_answer(key, byte_range, result, await result.bytes_async())

    async def _azure_suffix(self, key: str, suffix: int) -> Versioned:
        """The last `suffix` bytes of `key` on Azure Blob, which takes no suffix ranges
        (obstore refuses them): its size first, then the range, from the version the size
        came from. A blob rewritten between the two is asked again; its new bytes at the
        old size's offsets would be other bytes (a shard index read from chunk data)."""
        for _ in range(_SUFFIX_TRIES):
            meta = await obstore.head_async(self._store, self._path(key))
            version, start = self._version_of(meta), max(0, meta["size"] - suffix)
            if start == meta["size"]:
                return memoryview(b""), version
            data, found = await self._fetch(key, ByteRange.of(start, meta["size"] - start))
            if found == version:
                return data, found
        raise StoreError(
            f"cannot read the end of {key!r}: the blob was rewritten between its size and "
            f"its bytes, {_SUFFIX_TRIES} times in a row"
        )

    async def exists(self, key: str) -> bool:
        """Whether `key` is stored (one HEAD request)."""
        check_key(key)
        return await self.getsize(key) is not None

    async def getsize(self, key: str) -> int | None:
        """Size in bytes of `key` from a HEAD request; None if missing."""

        async def head() -> Any:
            with self._errors("stat", key):
                return await obstore.head_async(self._store, self._path(key))

        try:
            meta = await self._request("stat", key, head)
        except Exception as exc:
            if obstore_errors.is_not_found(exc):
                return None
            raise
        return int(meta["size"])

    # -- ranges sent with callbacks (`RangeSender`, `storage/policy/pump.py`) ------------

    def range_sender(self) -> ObjectStore:
        """This store: it sends bounded and suffix ranges as obstore futures."""
        return self

    def sends(self, byte_range: ByteRange) -> bool:
        """Bounded ranges and suffixes, but no empty one (HTTP cannot ask for 0 bytes)
        and no suffix of Azure's (it takes none)."""
        if byte_range.suffix is not None:
            return byte_range.suffix > 0 and not isinstance(self._store, AzureStore)
        return byte_range.length is not None and byte_range.length > 0

    def send_range(self, key: str, byte_range: ByteRange, listener: RangeListener) -> RangeSend:
        """One GET of `byte_range`, its headers and then its body awaited by callbacks."""
        check_not_forked("read", key)
        future = self._get_future(key, range_options(byte_range))
        return RangeSend(key, byte_range, listener, future, self._range_answer)

    async def range_failed(
        self, key: str, byte_range: ByteRange, max_bytes: int | None, error: BaseException
    ) -> Versioned | None:
        """What `read` answers for a sent range that failed with `error`, or raises."""
        try:
            with self._errors("read", key):
                raise self._get_error(key, error)
        except Exception as exc:
            return await self._read_failed(key, byte_range, max_bytes, exc)

    # -- writes ------------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        """Store `value` at `key`: one PUT, or past the part size (`max_request_bytes`) a
        multipart upload of parts of that size, `parts_per_object` at once.

        One connection uploads at ~90 MB/s to S3: a 64 MiB shard takes 0.7 s in one
        PUT, ~0.1 s in 8 parallel parts, for 2 more requests (create, complete)."""
        self._check_writable(key)
        data = memoryview(value).cast("B")
        shape = RequestShape.of(self.capabilities)
        part = shape.upload_part_bytes
        multipart = data.nbytes > part

        async def put() -> None:  # the whole value at once: safe to repeat
            try:
                with self._errors("write", key):
                    await obstore.put_async(
                        self._store,
                        self._path(key),
                        data,
                        use_multipart=multipart,
                        chunk_size=part,
                        max_concurrency=shape.parts_per_object,
                    )
            except StoreError as exc:
                if multipart and obstore_errors.upload_gone(exc.__cause__):
                    raise TransientStoreError(  # retried: the whole value, uploaded again
                        f"cannot write {key!r} in {self._where}: its multipart upload "
                        "failed and was gone when aborted (its completion's answer lost)"
                    ) from exc
                if not (multipart and obstore_errors.blocks_discarded(exc.__cause__)):
                    raise
                raise TransientStoreError(  # retried: a fresh upload of fresh blocks
                    f"cannot write {key!r} in {self._where}: another upload of it "
                    "committed first, discarding this one's blocks"
                ) from exc

        await self._request("write", key, put, nbytes=data.nbytes)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        """One PUT that succeeds only if `key` is still version `expected` (None: absent);
        else `VersionConflictError`. Never multipart: a multipart upload takes no
        condition. Refused after a try whose answer was lost, it succeeded where the value
        holds exactly what it sent, unless `claim` (`Store.set_if`)."""
        self._check_writable(key)
        data = memoryview(value).cast("B")
        mode: Any = "create"
        if expected is not None:
            e_tag, version = expected  # type: ignore[misc]
            mode = {name: v for name, v in (("e_tag", e_tag), ("version", version)) if v}

        unseen = False  # whether a try may have landed, its answer lost

        async def put() -> None:
            nonlocal unseen
            before, unseen = unseen, True  # this try may land, unless refused
            try:
                with self._errors("write", key):
                    await obstore.put_async(self._store, self._path(key), data, mode=mode)
            except Exception as exc:
                cause = exc.__cause__ if isinstance(exc, StoreError) else exc
                # Gone (If-Match on a deleted value) or another version: not ours, but
                # where a try before may have landed unseen (its answer lost) and the
                # value holds exactly what it sent.
                if isinstance(cause, PreconditionError | AlreadyExistsError | NotFoundError):
                    if not before:
                        raise VersionConflictError(
                            f"cannot write {key!r} in {self._where}: another "
                            "writer changed it since it was read"
                        ) from None
                    if not claim and await self._holds(key, data):
                        return
                    raise WriteOutcomeUnknownError(
                        f"cannot tell whether {key!r} in {self._where} was written by "
                        "this call: a try's answer was lost, and another writer may have "
                        "written it since"
                    ) from None
                unseen = before or not obstore_errors.not_carried_out(cause)  # a refusal: no
                raise

        try:
            await self._request("write", key, put, nbytes=data.nbytes)
        except StoreError as exc:  # the tries ran out: the last may have landed unseen
            obstore_errors.raise_outcome(exc, claim and unseen, f"{key!r} in {self._where}")

    async def _holds(self, key: str, data: memoryview) -> bool:
        """Whether the value at `key` is `data`, byte for byte (another size: its body
        is not read, whatever size another writer gave it; gone: it does not)."""
        try:
            with self._errors("read", key):
                result = await obstore.get_async(self._store, self._path(key))
                same_size = result.meta["size"] == data.nbytes
                return same_size and bytes(await result.bytes_async()) == data
        except (FileNotFoundError, NotFoundError):  # obstore raises the built-in for a 404
            return False

    async def delete(self, key: str) -> None:
        """Remove `key`; a missing key is not an error."""
        await self.delete_many([key])

    async def delete_many(self, keys: Iterable[str]) -> None:
        """Remove keys in batches (S3 and Azure delete many objects per request)."""
        keys = list(keys)
        for key in keys:
            self._check_writable(key)

        async def delete(name: str, batch: list[str]) -> None:
            with self._errors("delete", name):
                await obstore.delete_async(self._store, [self._path(key) for key in batch])

        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            try:
                await self._request("delete", batch[0], lambda b=batch: delete(b[0], b))
            except Exception as exc:
                if not obstore_errors.is_not_found(exc):
                    raise
                if len(batch) == 1:  # gone; asked again in a task, it waited for a slot
                    continue  # its caller held (a write's delete): none got one, ever
                # Local, GCS, Azure refuse to delete what is missing: each alone, at once.
                async with anyio.create_task_group() as tg:
                    for key in batch:
                        tg.start_soon(self._delete_if_present, key)

    async def _delete_if_present(self, key: str) -> None:
        async def delete() -> None:
            with self._errors("delete", key):
                await obstore.delete_async(self._store, self._path(key))

        with contextlib.suppress(FileNotFoundError, NotFoundError):
            await self._request("delete", key, delete)

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        flag = ", read_only=True" if self.read_only else ""
        return f"ObjectStore({self._where!r}{flag})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ObjectStore)
            and other.read_only == self.read_only
            and other._prefix == self._prefix
            and (other._store is self._store or bool(other._store == self._store))
        )

    def __hash__(self) -> int:
        # Worked out once (a read looks stores up by it; describing one took ~20 us).
        if self._hash is None:
            self._hash = hash((ObjectStore, self._where, self.read_only))
        return self._hash

    def __getstate__(self) -> dict[str, Any]:
        # The client as its pickle, which finds the one it made in the process it goes to.
        state = {**super().__getstate__(), "_hash": None}  # str hashes are per process
        state["_store"] = pickle.dumps(self._store)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _store=from_pickle(state["_store"]))
