"""A read's chunks served from the chunk cache before anything is fetched.

`serve_cached` runs first in a read with a cache (`engine/chunk_cache.py`): it groups
the selection's chunks by stored object, revalidates in one batch each object whose
cached chunks are older than the recheck policy allows (one conditional request each:
"unchanged" moves no bytes; a changed shard's answer is its new index, a changed chunk's
its new bytes, decoded at once), copies every chunk still good into the output, and
returns what is left to read as usual. Chunks served cost no request. Chunks of a store
that tells no version cannot be revalidated: once too old they are dropped and read as
usual.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence

import anyio
import numpy as np

from aiozarr.codecs import ShardLayout
from aiozarr.engine.chunk_cache import UNVERSIONED, ReadSession
from aiozarr.engine.decoding import DecodeJob, Reads
from aiozarr.engine.executor import run_codec
from aiozarr.engine.located import LocatedChunk, chunk_bound
from aiozarr.engine.located_index import remember_index
from aiozarr.engine.plan import plan_chunks, plan_shards
from aiozarr.engine.stored_array import StoredArray
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.protocol import UNCHANGED

#: An object's chunks a read needs: its key, its shard layout (None: a chunk), projections.
_Wanted = tuple[str, ShardLayout | None, list[ChunkProjection]]


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
    good: dict[str, Hashable] = {}
    stale: list[tuple[str, ShardLayout | None, list[ChunkProjection], Hashable]] = []
    for key, layout, needed in wanted:
        record = pool.record(place, key)
        if record is None or not any(
            pool.chunk(place, key, p.chunk_coords, record.version) is not None for p in needed
        ):
            continue
        if record.checked >= session.threshold:
            good[key] = record.version
        elif record.version is UNVERSIONED:  # nothing can revalidate it: read it again
            session.cache.forget(key)
        else:
            stale.append((key, layout, needed, record.version))
    served: set[str] = set()  # objects revalidation answered with their new bytes
    if stale:
        await _revalidate(reads, session, stale, good, served)
    rest: list[ChunkProjection] = []
    hits: list[tuple[np.ndarray, ChunkProjection]] = []
    for key, layout, needed in wanted:
        if key in served:
            continue
        version = good.get(key)
        for p in needed:
            chunk = None if version is None else pool.chunk(place, key, p.chunk_coords, version)
            if chunk is not None and not _fits(chunk, array, layout, p):
                session.cache.forget(key)  # decoded for an array since re-created
                chunk = None
            if chunk is None:
                rest.append(p)
            else:
                pool.touch(place, key, p.chunk_coords, version)
                hits.append((chunk, p))
    session.count("cache_hits", len(hits))
    session.count("cache_misses", len(rest))
    if hits:
        await run_codec(_copy, hits, reads.out, nbytes=sum(c.nbytes for c, _ in hits))
        reads.progress.advance(len(hits))
    return rest


def _fits(
    chunk: np.ndarray, array: StoredArray, layout: ShardLayout | None, p: ChunkProjection
) -> bool:
    """Whether a held `chunk` has the shape and data type the array's chunk `p` has now
    (under a policy that serves without checking, an array re-created at the same path
    with other chunks or another dtype could be served the old one's)."""
    chain = array.chain_for(p.chunk_coords) if layout is None else layout.inner_chain
    return chunk.shape == chain.spec.shape and chunk.dtype == chain.spec.dtype


def _copy(hits: list[tuple[np.ndarray, ChunkProjection]], out: np.ndarray) -> None:
    for chunk, p in hits:
        out[p.out_selection] = chunk[p.chunk_selection]


async def _revalidate(
    reads: Reads,
    session: ReadSession,
    stale: list[tuple[str, ShardLayout | None, list[ChunkProjection], Hashable]],
    good: dict[str, Hashable],
    served: set[str],
) -> None:
    """One conditional request per object of `stale` (a shard: its index; a chunk: its
    value), all at once: an unchanged one is good again; a changed one is forgotten, and
    its answer used (a shard's new index cached; a chunk's new value decoded)."""
    array, cache = reads.array, session.cache
    unbounded = reads.settings.unbounded_value_bytes
    session.count("cache_revalidations", len(stale))

    async def one(
        key: str, layout: ShardLayout | None, needed: list[ChunkProjection], version: Hashable
    ) -> None:
        sent = time.monotonic()
        byte_range = None if layout is None else layout.index_range
        chain = array.chain_for(needed[0].chunk_coords) if layout is None else None
        bound = None if chain is None else chunk_bound(chain, unbounded)
        answer = await array.store.get_if_changed(key, byte_range, version, max_bytes=bound)
        if answer is UNCHANGED:
            cache.pool.confirm(cache.place, key, version, sent)
            good[key] = version
            return
        cache.forget(key)
        if answer is None or not isinstance(answer, tuple):
            return  # gone: read as usual (it reads as the fill value)
        data, new_version = answer
        if layout is not None:
            remember_index(array, key, layout.decode_index(data, key), new_version)
            return
        assert chain is not None
        served.add(key)
        await reads.decode(
            [DecodeJob(LocatedChunk(key, None, chain, p), data, new_version) for p in needed]
        )

    async with anyio.create_task_group() as tg:
        for key, layout, needed, version in stale:
            tg.start_soon(one, key, layout, needed, version)
