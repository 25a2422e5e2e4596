"""A read's chunks served from the chunk cache before anything is fetched.

`serve_cached` runs first in a read with a cache (`engine/chunk_cache.py`): it groups
the selection's chunks by stored object, revalidates in one batch each object whose
cached chunks are older than the recheck policy allows (one conditional request each:
"unchanged" moves no bytes; a changed shard's answer is its new index, a changed chunk's
its new bytes, decoded at once), copies every chunk still good into the output, and
returns what is left to read as usual. Chunks served cost no request. Chunks of a store
that tells no version cannot be revalidated: once too old they are dropped and read as
usual, as are the chunks of a store that reads each key through ranges of other objects
(references: a check per chunk would be a read per chunk, the usual read one request per
run of a target's ranges).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial

import anyio
import numpy as np

from aiozarr.codecs import CodecChain, ShardLayout
from aiozarr.engine.chunk_cache import (
    UNVERSIONED,
    ObjectRecord,
    ReadSession,
    decoding_of,
)
from aiozarr.engine.decoding import DecodeJob, Reads
from aiozarr.engine.executor import run_codec, split_for_threads
from aiozarr.engine.located import LocatedChunk, chunk_bound
from aiozarr.engine.located_index import LocatedIndex, StaleIndexError, index_answered
from aiozarr.engine.plan import plan_chunks, plan_shards
from aiozarr.engine.stored_array import StoredArray
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.protocol import UNCHANGED

#: An object's chunks a read needs: its key, its shard layout (None: a chunk), projections.
_Wanted = tuple[str, ShardLayout | None, list[ChunkProjection]]
#: An object's chunks to revalidate: `_Wanted` and what the pool knows of the object.
_Stale = tuple[str, ShardLayout | None, list[ChunkProjection], ObjectRecord]


def _by_object(array: StoredArray, projections: Sequence[ChunkProjection]) -> list[_Wanted]:
    """The chunks `projections` need, by the object that holds them."""
    if array.layout is not None:
        shards = plan_shards(array, projections)
        return [(s.key, s.layout, [i.projection for i in s.inner]) for s in shards]
    chunks: dict[str, list[ChunkProjection]] = {}
    for c in plan_chunks(array.meta, array.prefix, projections):
        chunks.setdefault(c.key, []).append(c.projection)
    return [(key, None, needed) for key, needed in chunks.items()]


async def serve_cached(
    reads: Reads, session: ReadSession, projections: Sequence[ChunkProjection]
) -> list[ChunkProjection]:
    """Put every chunk of `projections` the cache may serve into `reads.out`; the
    projections left to read."""
    array, pool, place = reads.array, session.cache.pool, session.cache.place
    wanted = _by_object(array, projections)
    good: dict[str, ObjectRecord] = {}
    stale: list[_Stale] = []
    # A store that reads each key through others' ranges (references) would check each
    # chunk with a read of its own, where the usual read coalesces them: read them again.
    rereads_chunks = array.store.capabilities.delegates_reads
    for key, layout, needed in wanted:
        record = pool.record(place, key)
        if record is None or not any(
            _held(session, key, record, _chain(array, layout, p), p) is not None for p in needed
        ):
            continue
        if record.checked >= session.threshold:
            good[key] = record
        elif record.version is UNVERSIONED or (layout is None and rereads_chunks):
            session.cache.forget(key)  # read again as usual
        else:
            stale.append((key, layout, needed, record))
    served: set[str] = set()  # objects revalidation answered with their new bytes
    if stale:
        await _revalidate(reads, session, stale, good, served)
    rest: list[ChunkProjection] = []
    hits: list[tuple[np.ndarray, ChunkProjection]] = []
    decoded = 0  # chunks of `served`: decoded from their new bytes, so misses too
    for key, layout, needed in wanted:
        if key in served:
            decoded += len(needed)
            continue
        record = good.get(key)
        served_before = len(hits)
        for p in needed:
            chain = _chain(array, layout, p)
            chunk = None if record is None else _held(session, key, record, chain, p)
            if chunk is not None and chunk.shape != chain.spec.shape:
                session.cache.forget(key)  # decoded for an array since re-created
                chunk = None
            if chunk is None or record is None:
                rest.append(p)
            else:
                pool.touch(place, key, p.chunk_coords, record)
                hits.append((chunk, p))
        if layout is not None and record is not None:
            _one_version(reads, key, record, len(needed), hits, served_before, rest)
        elif record is not None and len(hits) > served_before:
            reads.pinned[key] = record.version  # a chunk: other selections read this version
    session.count("cache_hits", len(hits))
    session.count("cache_misses", len(rest) + decoded)
    if hits:
        await _copy_all(hits, reads.out)
        reads.progress.advance(len(hits))
    return rest


async def _copy_all(hits: list[tuple[np.ndarray, ChunkProjection]], out: np.ndarray) -> None:
    """Copy the cached chunks into `out`, a group per codec thread: a fresh output's
    first touch (its page faults) is most of a cached read's time, and spreads."""
    async with anyio.create_task_group() as tg:
        for group in split_for_threads(hits, sum(c.nbytes for c, _ in hits)):
            nbytes = sum(c.nbytes for c, _ in group)
            tg.start_soon(partial(run_codec, _copy, group, out, nbytes=nbytes))


def _one_version(
    reads: Reads,
    key: str,
    record: ObjectRecord,
    needed: int,
    hits: list[tuple[np.ndarray, ChunkProjection]],
    first: int,
    rest: list[ChunkProjection],
) -> None:
    """The chunks of shard `key` the cache serves (`hits[first:]`, of `needed`) and those
    left to read come from one version of it: the rest is read from `record`'s version
    or the read starts over (`Reads.pinned`, `check_pinned`); a version that cannot be
    asked for (`UNVERSIONED`) serves all of them or none (they go to `rest`), and served
    whole it is pinned too, so another selection of a `read_many` that reads the shard
    starts the read over without it (no version read can be `UNVERSIONED`)."""
    served = len(hits) - first
    if served == 0:
        return
    if record.version is not UNVERSIONED or served == needed:
        reads.pinned[key] = record.version
    elif reads.cache is not None:
        rest.extend(p for _, p in hits[first:])
        del hits[first:]
        reads.cache.cache.forget(key)  # so the rest is not kept beside them


def stale_pins(reads: Reads, indexes: dict[str, LocatedIndex | None]) -> list[str]:
    """The shards the cache served chunks of (`Reads.pinned`) whose index, read for the
    rest, is of another version (or the shard is gone), their cached chunks forgotten
    now: all of them, not one per try of the read (which spent the retries on a read of
    a few shards rewritten once)."""
    stale = [
        key
        for key, version in reads.pinned.items()
        if key in indexes and (indexes[key] is None or indexes[key].version != version)
    ]
    if stale and reads.cache is not None:
        reads.cache.cache.forget(*stale)
    return stale


def check_pinned(reads: Reads, indexes: dict[str, LocatedIndex | None]) -> None:
    """Raise `StaleIndexError` where `stale_pins` finds any: one read never mixes two
    versions of a shard."""
    stale = stale_pins(reads, indexes)
    if stale:
        raise StaleIndexError(stale[0])


def check_answer(reads: Reads, key: str, data: object, version: object) -> None:
    """Raise `StaleIndexError` where the answer for shard `key` (None: not found) is not
    of the version the cache served part of it from."""
    pinned = reads.pinned.get(key)
    if pinned is not None and (data is None or version != pinned):
        raise StaleIndexError(key)


def _chain(array: StoredArray, layout: ShardLayout | None, p: ChunkProjection) -> CodecChain:
    """The chain that decodes the array's chunk `p` now."""
    return array.chain_for(p.chunk_coords) if layout is None else layout.inner_chain


def _held(
    session: ReadSession,
    key: str,
    record: ObjectRecord,
    chain: CodecChain,
    p: ChunkProjection,
) -> np.ndarray | None:
    """The chunk `p` of `record`'s object held in the session's pool, if decoded as
    `chain` decodes (its codecs, data type and fill value: another writer may have
    changed them in the metadata and left the chunks' bytes and versions as they were)
    and kept from where `p` lies in the array now (an array created again on other
    edges puts a chunk of the same key elsewhere)."""
    coords, cache = p.chunk_coords, session.cache
    origin = session.origin(coords)
    return cache.pool.chunk(cache.place, key, coords, record, decoding_of(chain), origin)


def _copy(hits: list[tuple[np.ndarray, ChunkProjection]], out: np.ndarray) -> None:
    for chunk, p in hits:
        out[p.out_selection] = chunk[p.chunk_selection]


async def _revalidate(
    reads: Reads,
    session: ReadSession,
    stale: list[_Stale],
    good: dict[str, ObjectRecord],
    served: set[str],
) -> None:
    """One conditional request per object of `stale` (a shard: its index; a chunk: its
    value), all at once: an unchanged one is good again; a changed one is forgotten, and
    its answer used (a shard's new index cached; a chunk's new value decoded)."""
    array, cache = reads.array, session.cache
    unbounded = reads.settings.unbounded_value_bytes
    session.count("cache_revalidations", len(stale))

    async def one(
        key: str, layout: ShardLayout | None, needed: list[ChunkProjection], record: ObjectRecord
    ) -> None:
        sent, version = time.monotonic(), record.version
        byte_range = None if layout is None else layout.index_range
        chain = array.chain_for(needed[0].chunk_coords) if layout is None else None
        bound = None if chain is None else chunk_bound(chain, unbounded)
        answer = await array.store.get_if_changed(key, byte_range, version, max_bytes=bound)
        if answer is UNCHANGED:
            cache.pool.confirm(cache.place, key, version, sent)
            good[key] = record
            return
        cache.forget(key)
        if answer is None or not isinstance(answer, tuple):
            return  # gone: read as usual (it reads as the fill value)
        if layout is not None:
            index_answered(array, key, layout, answer)
            return
        data, new_version = answer
        assert chain is not None
        served.add(key)
        if new_version is not None:  # another selection reads it from this version too
            reads.pinned[key] = new_version
        await reads.decode(
            [DecodeJob(LocatedChunk(key, None, chain, p), data, new_version) for p in needed]
        )

    async with anyio.create_task_group() as tg:
        for key, layout, needed, record in stale:
            tg.start_soon(one, key, layout, needed, record)
