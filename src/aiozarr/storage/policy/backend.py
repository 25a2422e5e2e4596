"""What a store backend is to the rest of `storage/`: the read primitives, the
capabilities it declares, and the values a read asks for and gets back.

A backend implements one read primitive, `read(key, byte_range, max_bytes)` (one
request, no retries: bytes and the version they came from), and may implement a batched
one, `read_ranges(key, byte_ranges, max_bytes)` (many ranges of one value at once, when
`Capabilities.batched_reads`), and a `RangeSender`: ranges sent with callbacks rather
than awaited, so a batch's first tries need no task each (`storage/policy/pump.py`).
It declares what it can do, and how it is best read, in
one frozen `Capabilities`. `storage/policy/batching.py` reads any `ReadBackend` through these
alone, and `storage/protocol/store.py`'s `Store` is the ABC backends subclass.
docs/decisions/store-protocol.md is the recipe for a new backend.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeAlias

from aiozarr.byte_range import ByteRange
from aiozarr.errors import ValueTooLargeError
from aiozarr.storage.policy.runtime import StoreRuntime

__all__ = [
    "Answer",
    "Buffer",
    "Capabilities",
    "FileVersion",
    "NumberedVersion",
    "ObjectVersion",
    "RangeListener",
    "RangeRequest",
    "RangeSend",
    "RangeSender",
    "ReadBackend",
    "TornReadError",
    "UnprovenVersion",
    "Version",
    "Versioned",
    "check_size",
    "lasting",
    "sized_version",
    "stored_size",
]

#: Anything with the buffer protocol: bytes, memoryview, obstore.Bytes, ...
Buffer: TypeAlias = Any
#: Which stored version of a value some bytes came from: an object store's ETag, a
#: file's inode, mtime and size, a memory value's write number. Opaque, compared with
#: `==`; None where a store cannot tell versions apart.
Version: TypeAlias = Hashable
#: A value read with the version it came from.
Versioned: TypeAlias = tuple[Buffer, Version | None]
#: One answer of a batch: `(request index, bytes or None if missing, version)`.
Answer: TypeAlias = tuple[int, Buffer | None, Version | None]


class ObjectVersion(tuple):  # type: ignore[type-arg]
    """An object store answer's version, `(ETag, version id)`, compared as that pair. Beside
    it ride, not compared (they say nothing the ETag does not): the time the object was
    last modified, for readers that hold a time a source must not be newer than
    (icechunk's virtual chunk checksums), and its size, where the answer said it (a
    range's `Content-Range`), for readers that check what an index says lies inside it
    (`stored_size`)."""

    last_modified: Any
    size: int | None

    def __new__(
        cls, e_tag: Any, version: Any, last_modified: Any = None, size: int | None = None
    ) -> ObjectVersion:
        made = super().__new__(cls, (e_tag, version))
        made.last_modified = last_modified
        made.size = size
        return made

    def __reduce__(self) -> Any:
        return type(self), (self[0], self[1], self.last_modified, self.size)


class UnprovenVersion(ObjectVersion):
    """An answer's version that shows a change (another version differs from it) but
    cannot show that nothing changed: a plain HTTP server's ETag of an object modified
    within the last minute (nginx's "<mtime seconds>-<size>" stays the same over a
    same-size rewrite within a second). The answers of one read are compared by it; no
    later read relies on it (`lasting`)."""


def lasting(version: Version | None) -> bool:
    """Whether `version` may stand for bytes read before, in a later read: a shard index
    cached with it, a chunk cache entry revalidated by it (None: no version at all)."""
    return version is not None and not isinstance(version, UnprovenVersion)


class NumberedVersion(int):
    """A value's write number (a memory store's version), compared as that number; the
    size of the value rides beside it, not compared (`stored_size`)."""

    size: int

    def __new__(cls, number: int, size: int) -> NumberedVersion:
        made = super().__new__(cls, number)
        made.size = size
        return made

    def __reduce__(self) -> Any:
        return type(self), (int(self), self.size)


def stored_size(version: Version | None) -> int | None:
    """The size of the stored value a read's bytes came from, where its version says
    (an object's, a file's; a reference's length, `sized_version`); None where the
    version does not tell."""
    sized = ObjectVersion | FileVersion | NumberedVersion
    return version.size if isinstance(version, sized) else None


def sized_version(version: Version | None, size: int) -> Version:
    """`version` telling `size` as the stored size (`stored_size`): the version of a
    value that is `size` bytes of a larger object (a reference's range of its target).
    Compared as `version` is, and lasting where it is (`lasting`): no version at all is
    an `UnprovenVersion`."""
    if isinstance(version, NumberedVersion):
        return NumberedVersion(int(version), size)
    if isinstance(version, FileVersion):
        return version._replace(size=size)
    if isinstance(version, ObjectVersion):
        return type(version)(version[0], version[1], version.last_modified, size)
    if version is None:
        return UnprovenVersion(None, None, None, size)
    return ObjectVersion(version, None, None, size)  # an ETag alone (plain HTTP)


class FileVersion(NamedTuple):
    """A local file's version: what `os.stat` tells of the file a read opened. ctime is
    in it because `cp -p` and `tar x` rewrite a file in place and put its mtime back."""

    device: int
    inode: int
    mtime_ns: int
    ctime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """One value to read: a key and, optionally, a byte range of it (None: all of it).

    `max_bytes`: for a whole-value read, the largest value the caller accepts (a chunk's
    bound from its codecs, a metadata document's from `max_metadata_bytes`); a larger
    one raises `ValueTooLargeError` before its bytes are read. None: no bound but the
    memory of the process (object stores) or none (values already in memory, files).
    """

    key: str
    byte_range: ByteRange | None = None
    max_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a store can do, and how it is best read: declared once by its backend
    (`Store.CAPABILITIES`), passed through unchanged by wrappers.

    Whether one store may be written is also its read-only flag (`Store.read_only`);
    these say what its kind of backend can do at all.
    """

    #: `set` stores values (False: the backend only reads, as a remote zip archive).
    writes: bool = True
    #: `delete` removes values (False: a zip archive, which only appends).
    deletes: bool = True
    #: `list_prefix` / `list_dir` work (False: plain HTTP).
    listing: bool = True
    #: A byte range is read without reading the whole value.
    partial_reads: bool = True
    #: `set_if` writes only over the version read (what makes a read-modify-write safe
    #: between processes).
    conditional_writes: bool = False
    #: `delete_if` works.
    conditional_deletes: bool = False
    #: The conditions and versions come from a server (an object store's ETags and
    #: `If-Match`), which may drop them: the write path trusts a read-modify-write to
    #: them only once a probe found them honoured (`storage/protocol/write_conditions.py`).
    conditions_from_server: bool = False
    #: `get_inline` answers on the calling thread (the values are in this process): a
    #: read needs no task, thread hop or request policy.
    inline_reads: bool = False
    #: `read_ranges` is the backend's own: one call (one file open, one lookup) serves
    #: many ranges of a value and runs as ONE request under the policy. Otherwise each
    #: coalesced range is a request of its own, with its own retries and hedging.
    batched_reads: bool = False
    #: The store's reads are reads of other stores (a zip archive's members, kerchunk
    #: references), made under those stores' request policies: it has none of its own,
    #: and overrides `stream_versioned_values` to batch them.
    delegates_reads: bool = False
    #: A value read whole is checked against a checksum the store holds (a zip member's
    #: CRC-32), which a part of it cannot be: a read needing a few of a chunk's values
    #: reads it whole (`engine/chunk_parts.py`).
    checks_whole_values: bool = False
    #: Every answer's version tells the size of the value it came from (`stored_size`: a
    #: file's, a memory value's, an object's, a reference's length): a read needing a few
    #: of an uncompressed chunk's values reads only their span, and checks that size as a
    #: whole read checks the chunk; a span answered with no size all the same (a plain
    #: HTTP server's `bytes a-b/*`) makes the read start over with the chunk read whole.
    #: Other stores (zarr-python's) read such a chunk whole (`engine/chunk_parts.py`).
    sized_versions: bool = False
    #: Every node's metadata is already held (an icechunk snapshot's): reading a group's
    #: documents and listing its members make no request, so consolidated metadata
    #: would gain nothing (xarray's warning about its absence is not given).
    metadata_in_hand: bool = False
    #: Send a second copy of a read that is far slower than its peers (config `hedge_*`):
    #: worth it where tail latency is the network's, not for local stores.
    hedge_reads: bool = False
    #: On a bounded range answered with fewer bytes than asked, ask `getsize` whether the
    #: value really ends there (clipped: fine) or the body was cut short (retried).
    verify_short_reads: bool = False
    #: Ranges of one key closer than this are fetched as one request; None: the config's.
    coalesce_gap_bytes: int | None = None
    #: Requests larger than this are split into parts; None: the config's.
    max_request_bytes: int | None = None


class TornReadError(Exception):
    """Ranges of one value came from different versions of it (it was replaced between
    them); they are read again."""


class ReadBackend(Protocol):
    """What `storage/policy/batching.py` reads a store through (every `Store` is one)."""

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def runtime(self) -> StoreRuntime: ...

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None: ...

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None: ...

    async def getsize(self, key: str) -> int | None: ...

    def range_sender(self) -> RangeSender | None: ...


class RangeListener(Protocol):
    """Hears how one range sent by a `RangeSender` goes, on the loop that sent it."""

    def began(self) -> None:
        """The answer has begun (its headers are in): what is left is the body."""

    def done(self, answer: Versioned | BaseException) -> None:
        """The range's bytes and version, or why the try failed (never after `cancel`)."""


class RangeSend(Protocol):
    """One range in flight."""

    def cancel(self) -> None:
        """Stop it: its listener hears nothing more."""


class RangeSender(Protocol):
    """Sends single ranges of a backend with callbacks, one try each, no task: what the
    first tries of a batch's ranges go through. A try that fails is handed to
    `range_failed`, and any retry to the backend's `read` under the request policy."""

    def sends(self, byte_range: ByteRange) -> bool:
        """Whether `send_range` takes this kind of range (others are `read`)."""
        ...

    def send_range(self, key: str, byte_range: ByteRange, listener: RangeListener) -> RangeSend:
        """Send one try for `byte_range` of `key`; `listener` hears how it goes."""
        ...

    async def range_failed(
        self, key: str, byte_range: ByteRange, max_bytes: int | None, error: BaseException
    ) -> Versioned | None:
        """What `read` answers for a try that failed with `error` (None: the key is
        missing), or the error `read` raises for it."""
        ...


def check_size(key: str, size: int, max_bytes: int | None, where: object = None) -> None:
    """Raise `ValueTooLargeError` when a value of `size` bytes at `key` is over `max_bytes`."""
    if max_bytes is not None and size > max_bytes:
        place = "" if where is None else f" in {where!r}"
        raise ValueTooLargeError(
            f"cannot read {key!r}{place}: the value is {size} bytes, more than the "
            f"{max_bytes} allowed for it; it was not read"
        )
