"""Run a write: read what a partial update needs (one batch), merge, encode, store.

Every key a write touches is locked for the duration of its read-modify-write, so
concurrent writes from this process to one chunk or shard never lose an update,
whatever thread or event loop each runs on.
Locks are taken in sorted key order, so two writes can never wait on each other.

Writers in other processes or on other machines cannot see those locks. So where the
store can write on a condition, a value that was read to be merged into is written
only if it is still the version read (If-Match; If-None-Match when it was missing):
a conflict means another writer came first, and those keys are read, merged and
written again, until none conflicts or `retry_deadline_s` has passed. Values
replaced whole (nothing read) are written unconditionally: the last writer wins.
Where a server checks the conditions, they are trusted only once a probe found it
honours them and each read carried a version; otherwise the write raises
`ConditionalWriteUnsupportedError` before writing anything, unless `single_writer`
(`storage/protocol/write_conditions.py`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import numpy as np

from aiozarr.byte_range import ByteRange
from aiozarr.codecs import CodecChain, ShardIndex
from aiozarr.engine.executor import codec_threads, run_codec
from aiozarr.engine.located import chunk_bound, inner_range, shard_bound
from aiozarr.engine.plan import ChunkSelection, ShardSelection, plan_chunks, plan_shards
from aiozarr.engine.progress import ChunkProgress, ProgressCallback
from aiozarr.engine.settings import WriteSettings, unbounded_value_bytes
from aiozarr.engine.stored_array import StoredArray
from aiozarr.errors import CodecError, StoreError, ValueTooLargeError, VersionConflictError
from aiozarr.metadata.fill_value import filled, is_fill
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.protocol import (
    Buffer,
    RangeRequest,
    Store,
    Versioned,
    stored_size,
    write_conditions,
)

W = TypeVar("W", ChunkSelection, ShardSelection)


@dataclass(frozen=True, slots=True)
class _Encode:
    """One chunk to (re)write: its chain, its stored bytes if any, where the update goes;
    `keep_fill`: store it even when it is all fill (see `_Stores.keeps_fill`)."""

    chain: CodecChain
    existing: Buffer | None
    key: str
    projection: ChunkProjection
    keep_fill: bool = False


def _encode_one(
    job: _Encode, value: np.ndarray, fill_value: Any, write_empty: bool
) -> Buffer | None:
    """Encoded bytes of the updated chunk, or None when it should not be stored."""
    projection = job.projection
    if projection.is_complete_chunk:  # the update is the whole chunk, in order
        # np.asarray keeps a 0-d chunk 0-d (np.ascontiguousarray makes it 1-d).
        chunk = np.asarray(value[projection.out_selection], order="C")
    else:
        spec = job.chain.spec
        job.chain.check_fits(job.key)
        if job.existing is None:  # (a chunk covered inside the array is not read)
            chunk = filled(spec.shape, spec.dtype, fill_value)
        else:
            chunk = np.array(job.chain.decode(job.existing, job.key), copy=True)
        part = value[projection.out_selection]
        # One element: numpy would store a 0-d object array as the element itself.
        chunk[projection.chunk_selection] = part[()] if part.ndim == 0 else part
    if write_empty or job.keep_fill:
        return job.chain.encode(chunk, job.key)
    if is_fill(chunk, fill_value):
        return None
    return job.chain.encode_unless_fill(chunk, job.key)


def _encode_all(
    jobs: list[_Encode], value: np.ndarray, fill_value: Any, write_empty: bool
) -> list[Buffer | None]:
    return [_encode_one(job, value, fill_value, write_empty) for job in jobs]


# Decoded bytes encoded per thread hop when each group is stored as it is encoded:
# small enough that the first chunks go out while the rest are still being encoded.
_STREAM_GROUP_BYTES = 4 << 20


async def _encode(
    array: StoredArray,
    jobs: list[_Encode],
    value: np.ndarray,
    progress: ChunkProgress,
    write_empty: bool,
    on_group: Callable[[dict[str, Buffer | None]], Awaitable[None]] | None = None,
) -> list[Buffer | None]:
    """Encode `jobs` on the codec pool, one thread hop per group, a group per thread;
    chunks all fill are dropped (None) unless `write_empty`.

    With `on_group`, groups are smaller and each group's `{key: bytes}` is handed to
    it as soon as the group is encoded.
    """
    results: list[Buffer | None] = [None] * len(jobs)
    size = max(-(-len(jobs) // codec_threads()), 1)
    if on_group is not None and jobs:
        size = min(size, max(_STREAM_GROUP_BYTES // jobs[0].chain.spec.nbytes, 1))

    async def group(start: int) -> None:
        part = jobs[start : start + size]
        nbytes = sum(job.chain.spec.nbytes for job in part)
        encoded = await run_codec(
            _encode_all, part, value, array.fill_value, write_empty, nbytes=nbytes
        )
        results[start : start + size] = encoded
        progress.advance(len(part))
        if on_group is not None:
            await on_group({job.key: data for job, data in zip(part, encoded, strict=True)})

    if size >= len(jobs):
        if jobs:
            await group(0)
        return results
    async with anyio.create_task_group() as tg:
        for start in range(0, len(jobs), size):
            tg.start_soon(group, start)
    return results


async def write(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    value: np.ndarray,
    progress: ProgressCallback | None = None,
) -> None:
    """Store `value` (shaped like the selection) at the projected chunks.

    `progress(done, total)` is called as each chunk (inner chunk when sharded) is encoded.
    The settings are those in force as it starts (`WriteSettings`), for all its stages.
    """
    counter = ChunkProgress(len(projections), progress)
    settings = WriteSettings.of()
    if array.layout is None:
        await _write_chunks(array, projections, value, counter, settings)
    else:
        await _write_shards(array, projections, value, counter, settings)


class _Stores:
    """Writes (or deletes) each key as soon as its bytes are ready, so storing one chunk
    or shard overlaps encoding the next; remembers every key that failed, and every key
    whose conditional write found another writer's version (`conflicts`).

    `read` holds, for keys whose update was merged into what was read, the value read
    (None: it was missing): they are written on the condition that it is still there.
    """

    def __init__(self, array: StoredArray, read: dict[str, Versioned | None]) -> None:
        self.array = array
        store = array.store
        if store.supports_conditional_writes:
            write_conditions.check_versions(store, read)  # before anything is written
        self.based_on = (
            {k: v for k, v in read.items() if v is None or v[1] is not None}
            if store.supports_conditional_writes
            else {}
        )
        self.total = 0
        self.failed: dict[str, BaseException] = {}
        self.conflicts: set[str] = set()

    def keeps_fill(self, key: str) -> bool:
        """Whether `key` is written even when all fill: it was read and must change on
        a condition, and the store cannot delete on one."""
        store = self.array.store
        return self.based_on.get(key) is not None and not store.supports_conditional_deletes

    async def put(self, key: str, data: Buffer | None) -> None:
        self.total += 1
        store = self.array.store
        try:
            async with store.budget:
                await self._put(store, key, data)
        except VersionConflictError:
            self.conflicts.add(key)
        except Exception as error:  # collected and raised together by `check`
            self.failed[key] = error
        finally:
            self.array.forget(key, written=True)

    async def _put(self, store: Store, key: str, data: Buffer | None) -> None:
        if key not in self.based_on:
            await (store.delete(key) if data is None else store.set(key, data))
            return
        before = self.based_on[key]
        if data is not None:
            await store.set_if(key, data, None if before is None else before[1])
        elif before is not None:
            await store.delete_if(key, before[1])
        # else: it was missing and stays missing (a delete could drop another's write)

    async def put_all(self, encoded: dict[str, Buffer | None]) -> None:
        async with anyio.create_task_group() as tg:
            for key, data in encoded.items():
                tg.start_soon(self.put, key, data)

    def check(self) -> None:
        """Raise a `StoreError` naming every key whose write failed (each holds its old
        value or, where a try's answer was lost after the server wrote, its new one)."""
        if self.failed:
            first = next(iter(self.failed.values()))
            keys = ", ".join(sorted(self.failed))
            raise StoreError(
                f"write failed for {len(self.failed)} of {self.total} chunks ({keys}; each "
                "holds its old value, or its new one where an answer was lost after the "
                f"server wrote): {first}"
            ) from first


async def _read_versioned(
    store: Store, requests: list[RangeRequest]
) -> dict[str, Versioned | None]:
    """The values asked for (None: missing) with their versions, in one batch; a value
    past its request's bound (what its codecs can store) is refused unread with
    `ValueTooLargeError`, as a read refuses it: read to merge into, any size was taken
    into memory."""
    answers = await store.get_versioned_values(requests)
    return {r.key: answer for r, answer in zip(requests, answers, strict=True)}


async def _until_no_conflict(
    items: Sequence[W],
    write_once: Callable[[list[W]], Awaitable[set[str]]],
    settings: WriteSettings,
) -> None:
    """Run `write_once` on `items`, then again on those whose key conflicted, until none
    does; past `retry_deadline_s`, raise a `StoreError` naming the keys."""
    started = time.monotonic()
    pending = list(items)
    for attempt in itertools.count():
        conflicts = await write_once(pending)
        if not conflicts:
            return
        if time.monotonic() - started > settings.retry_deadline_s:
            raise StoreError(
                f"write of {', '.join(sorted(conflicts))} gave up after {attempt + 1} tries "
                f"in {time.monotonic() - started:.1f} s: other writers kept changing them"
            )
        pending = [item for item in pending if item.key in conflicts]
        await settings.back_off(attempt)


async def _write_chunks(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    value: np.ndarray,
    progress: ChunkProgress,
    settings: WriteSettings,
) -> None:
    writes = plan_chunks(array.meta, array.prefix, projections)
    partial = [w.key for w in writes if not w.projection.covers_chunk_in_array]
    if partial:
        await write_conditions.ensure_trusted(array.store, array.prefix, partial)

    unbounded = unbounded_value_bytes()

    async def write_once(pending: list[ChunkSelection]) -> set[str]:
        partial = [
            RangeRequest(
                w.key, None, chunk_bound(array.chain_for(w.projection.chunk_coords), unbounded)
            )
            for w in pending
            if not w.projection.covers_chunk_in_array
        ]
        read = await _read_versioned(array.store, partial)
        stores = _Stores(array, read)
        jobs = [
            _Encode(
                array.chain_for(w.projection.chunk_coords),
                None if read.get(w.key) is None else read[w.key][0],  # type: ignore[index]
                w.key,
                w.projection,
                stores.keeps_fill(w.key),
            )
            for w in pending
        ]
        await _encode(array, jobs, value, progress, settings.write_empty_chunks, stores.put_all)
        stores.check()
        return stores.conflicts

    async with array.store.runtime.locks.hold([w.key for w in writes]):
        await _until_no_conflict(writes, write_once, settings)


async def _write_shards(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    value: np.ndarray,
    progress: ChunkProgress,
    settings: WriteSettings,
) -> None:
    shards = plan_shards(array, projections)
    partial = [s.key for s in shards if not _replaces_whole_shard(s)]
    if partial:
        await write_conditions.ensure_trusted(array.store, array.prefix, partial)

    unbounded = unbounded_value_bytes()

    async def write_once(pending: list[ShardSelection]) -> set[str]:
        # A shard rewritten in full needs nothing from the store; others are read once.
        merged = [s for s in pending if not _replaces_whole_shard(s)]
        read, by_index, changed = await _read_shards(array, merged, unbounded)
        stores = _Stores(array, read)

        async def assemble(shard: ShardSelection) -> None:
            before = read.get(shard.key)
            stored = by_index.get(shard.key)
            if stored is None:
                stored = {} if before is None else _stored_chunks(shard, before[0])
            data = await _encode_shard(array, shard, stored, value, progress, settings)
            if data is None and stores.keeps_fill(shard.key):
                data = shard.layout.empty_shard()
            await stores.put(shard.key, data)

        async with anyio.create_task_group() as tg:
            for shard in pending:
                if shard.key not in changed:
                    tg.start_soon(assemble, shard)
        stores.check()
        return stores.conflicts | changed

    async with array.store.runtime.locks.hold([s.key for s in shards]):
        await _until_no_conflict(shards, write_once, settings)


def _replaces_whole_shard(shard: ShardSelection) -> bool:
    """Whether the write gives every inner chunk of the shard whole, those past the
    array's edge included: another writer may have grown the array and written there
    (an edge shard is merged into, as an edge chunk is: docs/decisions/failure-model.md)."""
    if not all(r.projection.is_complete_chunk for r in shard.inner):
        return False
    return len({r.inner_coords for r in shard.inner}) == math.prod(shard.layout.chunks_per_shard)


async def _encode_shard(
    array: StoredArray,
    shard: ShardSelection,
    stored: dict[tuple[int, ...], Buffer],
    value: np.ndarray,
    progress: ChunkProgress,
    settings: WriteSettings,
) -> Buffer | None:
    """The new bytes of one shard: untouched inner chunks kept as stored, touched re-encoded."""
    layout = shard.layout
    chunks: dict[tuple[int, ...], Buffer | None] = dict(stored)

    jobs = [
        _Encode(layout.inner_chain, chunks.get(inner.inner_coords), shard.key, inner.projection)
        for inner in shard.inner
    ]
    encoded = await _encode(array, jobs, value, progress, settings.write_empty_chunks)
    for inner, data in zip(shard.inner, encoded, strict=True):
        chunks[inner.inner_coords] = data
    return await run_codec(layout.encode_shard, chunks, nbytes=layout.nbytes)


def _stored_chunks(shard: ShardSelection, existing: Buffer) -> dict[tuple[int, ...], Buffer]:
    """The inner chunks stored in `existing` (shard `shard`'s bytes), as stored."""
    view = memoryview(existing).cast("B")
    index = shard.layout.index_of_shard(view, shard.key)
    out: dict[tuple[int, ...], Buffer] = {}
    for coords, byte_range in _stored_ranges(shard, index).items():
        start, stop = byte_range.resolve(len(view))
        out[coords] = view[start:stop]
    return out


def _stored_ranges(shard: ShardSelection, index: ShardIndex) -> dict[tuple[int, ...], ByteRange]:
    """Where each inner chunk `index` says is stored lies in shard `shard`.

    A stored entry of no bytes (no codec writes one: empty inner chunks are marked
    empty) reads as a `CodecError`; kept, it would be written back as empty, the fill
    value, so a write into the shard that does not replace it is refused.
    """
    written = {inner.inner_coords for inner in shard.inner if inner.projection.is_complete_chunk}
    ranges: dict[tuple[int, ...], ByteRange] = {}
    for coords in np.ndindex(*shard.layout.chunks_per_shard):
        byte_range = index.range_of(coords)
        if byte_range is None:
            continue
        if byte_range.length == 0 and coords not in written:
            raise CodecError(
                f"shard {shard.key!r}: corrupt shard index: inner chunk {coords} has offset "
                f"{byte_range.offset} and length 0, which no codec stores; the shard was not "
                "written"
            )
        ranges[coords] = byte_range
    return ranges


async def _read_shards(
    array: StoredArray, shards: list[ShardSelection], unbounded: int
) -> tuple[dict[str, Versioned | None], dict[str, dict[tuple[int, ...], Buffer]], set[str]]:
    """The shards a write merges into, as a read reads them: whole, within the most
    their chunks and index can be stored as; where one is larger (bytes no index entry
    points to: zarrs' partial encoder appends chunks and rewrites the index), by their
    indexes from then on (`shards_by_index`, `located.refused_whole`), every inner
    chunk within its codecs' bound. Reading any size whole took it all into memory.
    Returns each value read (None: missing) with its version, the inner chunks of those
    read by their index, and the keys that changed between those reads (conflicts)."""
    if not array.shards_by_index:
        requests = [RangeRequest(s.key, None, shard_bound(s.layout, unbounded)) for s in shards]
        try:
            return await _read_versioned(array.store, requests), {}, set()
        except ValueTooLargeError:
            array.shards_by_index = True
    return await _read_by_index(array.store, shards, unbounded)


async def _read_by_index(
    store: Store, shards: list[ShardSelection], unbounded: int
) -> tuple[dict[str, Versioned | None], dict[str, dict[tuple[int, ...], Buffer]], set[str]]:
    """`_read_shards` by their indexes: every index in one batch, then every stored
    inner chunk in the next, as a read asks for them."""
    answers = await store.get_versioned_values(
        [RangeRequest(s.key, s.layout.index_range) for s in shards]
    )
    read: dict[str, Versioned | None] = {}
    wanted: list[tuple[str, tuple[int, ...], ByteRange]] = []
    for shard, answer in zip(shards, answers, strict=True):
        if answer is None:
            read[shard.key] = None
            continue
        layout = shard.layout
        index = layout.decode_index(answer[0], shard.key, stored_size(answer[1]))
        read[shard.key] = (b"", answer[1])  # the version to write on
        # an entry of no bytes is one this write replaces (`_stored_ranges`): not read
        for coords, byte_range in _stored_ranges(shard, index).items():
            if byte_range.length:
                inner_range(index, layout, shard.key, coords, unbounded)  # within its bound
                wanted.append((shard.key, coords, byte_range))
    parts = [RangeRequest(key, r) for key, _, r in wanted]
    found = await store.get_versioned_values(parts) if parts else []
    by_index: dict[str, dict[tuple[int, ...], Buffer]] = {k: {} for k, v in read.items() if v}
    changed: set[str] = set()
    for (key, coords, _), part in zip(wanted, found, strict=True):
        version = read[key][1]  # type: ignore[index]
        if part is None or (part[1] != version and None not in (part[1], version)):
            changed.add(key)  # rewritten between its index and its chunks
        else:
            by_index[key][coords] = part[0]
    return read, by_index, changed
