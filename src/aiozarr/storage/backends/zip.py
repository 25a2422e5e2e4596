"""`ZipStore`: a Zarr hierarchy in one zip archive (`.zarr.zip`), as zarr-python's ZipStore.

Reading needs only byte ranges of the archive. The archive is one value of another store
(`LocalStore` for a file, an object store for `s3://bucket/data.zarr.zip`): its central
directory comes from the end record (one suffix read, one more when the directory is
larger), each member's data offset from its local header (read once, in one batch for
all members a read needs), and then every member range a read asks for is a range of
that one value, sent in one `stream_partial_values` of the inner store, which coalesces,
budgets and retries it as any other read. Members stored without compression (what
zarr-python's ZipStore and `zip -0` write) are read by range; a compressed member is
read whole and inflated, off the event loop when large.

An archive is untrusted input: every malformed directory (sizes or offsets past the
archive, names that are not UTF-8, short zip64 fields, a directory larger than
`max_metadata_bytes`) raises `StoreError`; a member read whole is checked against its
CRC-32 (`ChecksumError`); a member larger than the read's `max_bytes` is refused from
its directory size before any of it is read or inflated. The directory is parsed on a
worker thread, so a large one does not stall the event loop.

Writing (a local file opened "w", "a" or "x") appends entries with `zipfile`, as
zarr-python's ZipStore does: zip has no in-place update, so a key written twice is
stored twice and reads give the last one; entries cannot be deleted; the archive is a
valid zip only once `close()` has written its central directory (a store left open is
closed when it is garbage collected or when the interpreter exits).
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time
import weakref
import zipfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.errors import DeleteUnsupportedError, StoreError
from aiozarr.storage.backends.zip_format import (
    END64,
    END64_SIZE,
    LOCAL,
    LOCAL_SIZE,
    LOCATOR64,
    LOCATOR64_SIZE,
    STORED,
    TAIL,
    ZIPFILE_ERRORS,
    Member,
    check_crc,
    check_member,
    find_end_record,
    inflate,
    member_of,
    parse_directory,
    table_of,
)
from aiozarr.storage.policy.fanin import Emit, Spawn, fan_in
from aiozarr.storage.protocol import (
    Buffer,
    Capabilities,
    RangeRequest,
    Store,
    Versioned,
    check_key,
    check_size,
    dir_entries,
    read_as_batch,
)

__all__ = ["ZipStore"]

ZipMode = Literal["r", "w", "a", "x"]

_COPY = (
    "a copy unpickled from a writer; a zip archive is written only by the handle that "
    "opened it: use the threaded scheduler, or write to a directory and zip it after"
)

# Work on more bytes than this (inflating, a CRC) runs on a worker thread, not the loop.
_INLINE_BYTES = 64 << 10


@dataclass
class _Archive:
    """The zipfile a writable store appends to, shared with its finalizer."""

    zf: zipfile.ZipFile | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def _close_archive(archive: _Archive) -> None:
    with archive.lock:
        if archive.zf is not None:
            zf, archive.zf = archive.zf, None
            zf.close()


class ZipStore(Store):
    """A zip archive of Zarr keys: a local file (read and written) or an archive in
    another store (read only: `ZipStore.over(store, key)`).

    `mode` is zarr-python's: "r" reads, "w" creates or truncates, "a" appends (creating
    the file if needed), "x" creates and fails if the file exists. `compression` is a
    `zipfile` method for new entries (`ZIP_STORED` by default, as zarr-python: stored
    members are read by range). Call `close()` (or use `with`) to finish the archive.
    """

    # Its reads are ranges of the archive, read through the archive's store (its request
    # policy applies); entries cannot be deleted (zip has no in-place update); a member
    # read whole is checked against its CRC-32.
    CAPABILITIES = Capabilities(deletes=False, delegates_reads=True, checks_whole_values=True)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: ZipMode = "r",
        read_only: bool | None = None,
        compression: int = zipfile.ZIP_STORED,
        allowZip64: bool = True,  # zarr-python's name
        max_concurrency: int | None = None,
    ) -> None:
        if mode not in ("r", "w", "a", "x"):
            raise StoreError(f"ZipStore mode must be 'r', 'w', 'a' or 'x', got {mode!r}")
        if read_only is None:
            read_only = mode == "r"
        if mode == "r" and not read_only:
            raise StoreError("ZipStore opened with mode 'r' cannot be written")
        super().__init__(read_only=read_only, max_concurrency=max_concurrency)
        from aiozarr.storage.backends.local import LocalStore

        self._path: Path | None = Path(path).expanduser().resolve()
        self._archive_store: Store = LocalStore(self._path.parent, read_only=True)
        self._key = self._path.name
        self._mode: ZipMode = mode
        self._compression = compression
        self._allow_zip64 = allowZip64
        self._init_state()

    @classmethod
    def over(cls, store: Store, key: str) -> ZipStore:
        """The archive stored at `key` of `store`, read only (e.g. on S3 or HTTP)."""
        check_key(key)
        self = cls.__new__(cls)
        Store.__init__(self, read_only=True)
        self._path = None
        self._archive_store = store
        self._key = key
        self._mode = "r"
        self._compression = zipfile.ZIP_STORED
        self._allow_zip64 = True
        self._init_state()
        return self

    def _init_state(self) -> None:
        self._members: dict[str, Member] | None = None
        self._data_offsets: dict[int, int] = {}  # header offset -> data offset
        self._end: int | None = None  # where members end (the directory), when read
        self._archive = _Archive()
        self._copy_of_writer = False  # a writer's copy, unpickled: read only
        self._finalizer = weakref.finalize(self, _close_archive, self._archive)

    @property
    def path(self) -> Path | None:
        """The archive's file (None for an archive inside another store)."""
        return self._path

    def reload(self) -> None:
        """Read the central directory again on next use (a read-only store keeps the one
        it read first; call this after another writer has finished the archive)."""
        if not self.writable:
            self._members = None
            self._data_offsets = {}
            self._end = None

    # -- the archive -----------------------------------------------------------------------

    def _zipfile(self) -> zipfile.ZipFile:
        """The zipfile to append to, opened on first use (call with the lock held).

        "w" and "x" apply to the first open only: reopening after `close()` appends, so
        the entries already written stay (as zarr-python's ZipStore does).
        """
        archive = self._archive
        if archive.zf is None:
            assert self._path is not None
            try:
                archive.zf = zipfile.ZipFile(
                    self._path,
                    self._mode,
                    compression=self._compression,
                    allowZip64=self._allow_zip64,
                )
            except ZIPFILE_ERRORS as error:  # a malformed archive: any of these
                raise StoreError(f"cannot open {self!r}: {error!r}") from error
            if self._mode in ("w", "x"):
                self._mode = "a"
            self._members = table_of(archive.zf.infolist())
        return archive.zf

    def close(self) -> None:
        """Write the central directory and close the file: the archive is then complete."""
        _close_archive(self._archive)

    def __enter__(self) -> ZipStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ZipStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    async def _table(self) -> dict[str, Member]:
        """Every member by name (the last entry of a name wins, as in `zipfile`)."""
        members = self._members
        if members is not None:
            return members
        # Two first reads may both parse the directory: the same table, no lock needed
        # (an anyio lock would tie the store to one event loop).
        if self.writable:
            await anyio.to_thread.run_sync(self._open_for_writing)
        else:
            self._members = await self._read_central_directory()
        assert self._members is not None
        return self._members

    def _open_for_writing(self) -> None:
        with self._archive.lock:
            self._zipfile()

    async def _read_central_directory(self) -> dict[str, Member]:
        store, key = self._archive_store, self._key
        size = await store.getsize(key)
        if size is None:
            raise StoreError(f"cannot open {self!r}: there is no archive at {key!r} in {store!r}")
        tail = await store.get(key, ByteRange.last(min(size, TAIL)))
        tail_bytes = bytes(memoryview(tail).cast("B")) if tail is not None else b""
        tail_start = size - len(tail_bytes)
        cd_offset, cd_size = await self._locate_directory(tail_bytes, tail_start)
        if cd_offset + cd_size > size:
            raise StoreError(
                f"{self!r}: the central directory ({cd_size} bytes at {cd_offset}) lies past "
                f"the end of the archive ({size} bytes): not a zip archive"
            )
        check_size(key, cd_size, config.get().max_metadata_bytes, self)  # it is read whole
        if cd_offset >= tail_start:
            directory = tail_bytes[cd_offset - tail_start : cd_offset - tail_start + cd_size]
        else:
            data = await store.get(key, ByteRange.of(cd_offset, cd_size))
            directory = b"" if data is None else bytes(memoryview(data).cast("B"))
        if len(directory) != cd_size:
            raise StoreError(f"{self!r}: the central directory is cut short: not a zip archive")
        # Parsing is CPU work in proportion to the entries (300,000: over a second).
        members = await anyio.to_thread.run_sync(parse_directory, directory, repr(self), cd_offset)
        self._end = cd_offset
        return members

    async def _locate_directory(self, tail: bytes, tail_start: int) -> tuple[int, int]:
        """(offset, size) of the central directory, from the end record in `tail`."""
        at = find_end_record(tail)
        if at is None:
            raise StoreError(f"{self!r} is not a zip archive (no end of central directory)")
        _, _, _, _, entries, cd_size, cd_offset, _ = struct.unpack_from("<4s4H2LH", tail, at)
        if 0xFFFF not in (entries,) and 0xFFFFFFFF not in (cd_size, cd_offset):
            return cd_offset, cd_size
        locator = at - LOCATOR64_SIZE
        if locator < 0 or tail[locator : locator + 4] != LOCATOR64:
            raise StoreError(f"{self!r}: zip64 end record expected but not found")
        (end64_offset,) = struct.unpack_from("<Q", tail, locator + 8)
        if end64_offset + END64_SIZE > tail_start + len(tail):
            raise StoreError(f"{self!r}: the zip64 end record lies past the end of the archive")
        if end64_offset >= tail_start:
            record = tail[end64_offset - tail_start : end64_offset - tail_start + END64_SIZE]
        else:
            data = await self._archive_store.get(self._key, ByteRange.of(end64_offset, END64_SIZE))
            record = b"" if data is None else bytes(memoryview(data).cast("B"))
        if len(record) != END64_SIZE or record[:4] != END64:
            raise StoreError(f"{self!r}: corrupt zip64 end of central directory")
        cd_size, cd_offset = struct.unpack_from("<QQ", record, 40)
        return cd_offset, cd_size

    # -- reads -----------------------------------------------------------------------------

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """A batch of one: its bound is checked against the directory before anything is
        read (the inner store's request policy retries the ranges)."""
        return await read_as_batch(self, key, byte_range, max_bytes)

    @contextlib.asynccontextmanager
    async def stream_versioned_values(self, requests: Sequence[RangeRequest]) -> AsyncIterator[Any]:
        """Answers as they land: one batch of ranges of the archive for all `requests`
        (after one batch of local headers for members not read before). Members carry
        no version: the directory is read once per store."""
        for request in requests:
            check_key(request.key)
        members = await self._table()
        found = {r.key: members[r.key] for r in requests if r.key in members}
        for request in requests:  # the directory gives each member's size: check first
            if request.byte_range is None and request.key in found:
                check_size(request.key, found[request.key].size, request.max_bytes, self)
        for key, member in found.items():
            check_member(member, key, self)
        await self._resolve_data_offsets(found.items())
        inner: list[RangeRequest] = []
        targets: list[list[int]] = []  # per inner request, the requests it answers
        whole: dict[str, int] = {}  # compressed members: index of their one inner request
        missing = [i for i, r in enumerate(requests) if r.key not in found]
        for i, request in enumerate(requests):
            member = found.get(request.key)
            if member is None:
                continue
            start = self._data_offsets[member.header_offset]
            if member.method == STORED:
                first, stop = (
                    (0, member.size)
                    if request.byte_range is None
                    else (request.byte_range.resolve(member.size))
                )
                inner.append(RangeRequest(self._key, ByteRange.of(start + first, stop - first)))
                targets.append([i])
            elif request.key in whole:
                targets[whole[request.key]].append(i)
            else:
                whole[request.key] = len(inner)
                inner.append(RangeRequest(self._key, ByteRange.of(start, member.compressed_size)))
                targets.append([i])

        async def fetch(emit: Emit, spawn: Spawn) -> None:
            for i in missing:
                emit((i, None, None))
            if not inner:
                return
            async with self._archive_store.stream_partial_values(inner) as landed:
                async for n, data in landed:
                    for i, answer in await self._answers(requests, targets[n], found, data):
                        emit((i, answer, None))

        async with fan_in(fetch) as answers:
            yield answers

    async def _answers(
        self,
        requests: Sequence[RangeRequest],
        indices: list[int],
        found: dict[str, Member],
        data: Buffer | None,
    ) -> list[tuple[int, Buffer | None]]:
        """One archive range that landed -> the answers to `requests[indices]`: the
        member's bytes (checked against its CRC when read whole) or a range of them."""
        request = requests[indices[0]]
        key = request.key
        member = found[key]
        if data is None:
            raise StoreError(f"{self!r}: the archive vanished while it was read")
        got = memoryview(data).nbytes
        if member.method == STORED:
            lo, hi = (
                (0, member.size)
                if request.byte_range is None
                else request.byte_range.resolve(member.size)
            )
            if got != hi - lo:
                raise StoreError(
                    f"cannot read {key!r} in {self!r}: the archive ends {hi - lo - got} "
                    "bytes into it (cut short or a corrupt directory)"
                )
            if request.byte_range is None:
                await _off_loop(member.size, check_crc, member, data, key, self)
            return [(indices[0], data)]
        if got != member.compressed_size:
            raise StoreError(
                f"cannot read {key!r} in {self!r}: {got} of its {member.compressed_size} "
                "compressed bytes are in the archive (cut short or a corrupt directory)"
            )
        value = await _off_loop(member.size, inflate, member, data, key, self)
        out: list[tuple[int, Buffer | None]] = []
        for i in indices:
            byte_range = requests[i].byte_range
            lo, hi = (0, len(value)) if byte_range is None else byte_range.resolve(len(value))
            out.append((i, value if byte_range is None else memoryview(value)[lo:hi]))
        return out

    async def _resolve_data_offsets(self, members: Any) -> None:
        """Read the local headers of `members` (`(name, member)` pairs) not read before,
        in one batch; each member's data must end before the central directory."""
        members = list(members)
        todo = sorted({m.header_offset for _, m in members} - self._data_offsets.keys())
        if todo:
            requests = [RangeRequest(self._key, ByteRange.of(o, LOCAL_SIZE)) for o in todo]
            headers = await self._archive_store.get_partial_values(requests)
            for offset, header in zip(todo, headers, strict=True):
                data = b"" if header is None else bytes(memoryview(header).cast("B"))
                if len(data) != LOCAL_SIZE or data[:4] != LOCAL:
                    raise StoreError(f"{self!r}: no local file header at offset {offset}")
                name_length, extra_length = struct.unpack_from("<HH", data, 26)
                self._data_offsets[offset] = offset + LOCAL_SIZE + name_length + extra_length
        end = self._end
        for name, member in members:
            start = self._data_offsets[member.header_offset]
            if end is not None and start + member.compressed_size > end:
                raise StoreError(
                    f"cannot read {name!r} in {self!r}: its {member.compressed_size} bytes at "
                    f"{start} run into the central directory at {end} (a corrupt archive)"
                )

    async def exists(self, key: str) -> bool:
        """Whether the archive holds a member `key`."""
        check_key(key)
        return key in await self._table()

    async def getsize(self, key: str) -> int | None:
        """The uncompressed size of member `key`, or None if missing."""
        check_key(key)
        member = (await self._table()).get(key)
        return None if member is None else member.size

    # -- writes ----------------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        """Append an entry for `key` (the last entry of a name is the one read)."""
        self._check_writable(key)
        check_key(key)
        data = bytes(memoryview(value).cast("B"))
        await self._table()
        await anyio.to_thread.run_sync(self._append, key, data)

    def _append(self, key: str, data: bytes) -> None:
        info = zipfile.ZipInfo(key, date_time=time.localtime(time.time())[:6])
        info.compress_type = self._compression
        info.external_attr = 0o644 << 16  # -rw-r--r--
        with self._archive.lock:
            zf = self._zipfile()
            try:
                zf.writestr(info, data)
                assert zf.fp is not None
                zf.fp.flush()  # readers go through the file: they see the entry from now on
            except OSError as error:
                raise StoreError(f"cannot write {key!r} in {self!r}: {error}") from error
            assert self._members is not None
            self._members[key] = member_of(zf.getinfo(key))

    async def delete(self, key: str) -> None:
        """Entries cannot be deleted from a zip archive: a missing `key` is fine, an
        existing one raises `DeleteUnsupportedError` (a NotImplementedError, as
        zarr-python's `ZipStore` raises)."""
        self._check_writable(key)
        if key in await self._table():
            raise DeleteUnsupportedError(
                f"cannot delete {key!r} in {self!r}: entries of a zip archive cannot be "
                "deleted; write the hierarchy to a directory (or a new archive) instead"
            )

    # -- listing ---------------------------------------------------------------------------

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every member name starting with `prefix`, sorted."""
        check_key(prefix, prefix=True)
        for name in sorted(await self._table()):
            if name.startswith(prefix):
                yield name

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """The names directly under `prefix`, sorted."""
        check_key(prefix, prefix=True)
        base = prefix.rstrip("/")
        base = base + "/" if base else ""
        children = {
            name[len(base) :].split("/", 1)[0]
            for name in await self._table()
            if name.startswith(base) and len(name) > len(base)
        }
        for child in sorted(children):
            yield child

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        """`(name, is_directory)` directly under `prefix`, sorted."""
        check_key(prefix, prefix=True)
        for entry in dir_entries(await self._table(), prefix):
            yield entry

    # -- identity --------------------------------------------------------------------------

    def __repr__(self) -> str:
        if self._path is None:
            return f"ZipStore.over({self._archive_store!r}, {self._key!r})"
        if self._copy_of_writer:
            return f"ZipStore({str(self._path)!r}, mode={self._mode!r}, read_only=True: {_COPY})"
        return f"ZipStore({str(self._path)!r}, mode={self._mode!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ZipStore) and (other._path, other._archive_store, other._key) == (
            self._path,
            self._archive_store,
            self._key,
        )

    def __hash__(self) -> int:
        return hash((type(self), self._path, self._key))

    def __getstate__(self) -> dict[str, Any]:
        with self._archive.lock:
            state = self.__dict__.copy()
        for name in ("_archive", "_finalizer", "_members", "_runtime"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._runtime = None
        if self._mode in ("w", "x"):  # a copy must not truncate what the original wrote
            self._mode = "a"
        # A second zipfile writer on the file would overwrite the original's entries and
        # directory: only the handle that opened the archive writes it.
        copy_of_writer = bool(state.get("_copy_of_writer")) or not self._read_only
        self._init_state()
        self._copy_of_writer = copy_of_writer
        self._read_only = True if copy_of_writer else self._read_only


async def _off_loop(nbytes: int, function: Any, *args: Any) -> Any:
    """`function(*args)`, on a worker thread when it works on more than a few KiB."""
    if nbytes <= _INLINE_BYTES:
        return function(*args)
    return await anyio.to_thread.run_sync(function, *args)
