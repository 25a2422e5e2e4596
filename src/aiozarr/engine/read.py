"""Run a read: plan -> locate -> fetch, decoding each answer as it lands -> scatter.

Each stage is one batch across every chunk of the selection (`engine/located.py` holds
the record they pass on, a chunk located in the store):

1. `plan_reads` (pure) says what can be fetched at once (chunks of an unsharded array,
   shards needed whole: one request each, index included) and which shards need their
   index first;
2. one batch reads every shard index not cached (`shard_indexes`), and `locate` turns
   each shard and its index into located chunks;
3. one stream of requests fetches them all (`_fetch_and_decode`), coalesced, within the
   store's byte budget; each answer is decoded on the codec pool as it lands and
   scattered into `out`.

A large shard needed whole may instead be read in parts while few requests are in
flight (`engine/parts_ahead.py`; how many requests of what size is the store's
`RequestShape`'s to say). The inline read
(values in this process) runs the same plan with a synchronous fetcher.

A shard index is only good for the version of the shard it was read from
(`engine/located_index.py`): a read that meets bytes of another version starts over.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import anyio
import numpy as np

from aiozarr.engine.cached_reads import check_answer, check_pinned, serve_cached
from aiozarr.engine.decoding import DecodeJob, Reads, decode_one
from aiozarr.engine.executor import READS, decodes_here
from aiozarr.engine.freed_memory import FreedMemory
from aiozarr.engine.gathering import gathering
from aiozarr.engine.located import (
    Fetch,
    LocatedChunk,
    UnsizedSpanError,
    WholeShard,
    WholeShardRefusedError,
    locate,
    plan_reads,
    refused_whole,
)
from aiozarr.engine.located_index import (
    STALE_RETRIES,
    LocatedIndex,
    StaleIndexError,
    cached_index,
    forget_stale,
    index_answered,
    shard_indexes,
    writers_kept_out,
)
from aiozarr.engine.output import empty_output
from aiozarr.engine.parts_ahead import PartsAhead
from aiozarr.engine.plan import ShardSelection
from aiozarr.engine.progress import ChunkProgress, ProgressCallback
from aiozarr.engine.settings import ReadSettings, unbounded_value_bytes
from aiozarr.engine.stored_array import StoredArray
from aiozarr.engine.streaming import Answers, stream_in_batches
from aiozarr.errors import ValueTooLargeError, unwrap_group
from aiozarr.metadata.fill_value import fill_at
from aiozarr.selection.indexing import ChunkProjection, Indexer
from aiozarr.storage.protocol import check_size


async def read(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    out: np.ndarray,
    progress: ProgressCallback | None = None,
) -> frozenset[str]:
    """Fill `out` with the selected values; `projections` are over `array.read_grid`.
    Returns the keys of the stored objects (chunks; shards, not their inner chunks) the
    selection needs that the store does not hold: they read as the fill value.

    `progress(done, total)` is called as each chunk (inner chunk when sharded) is finished.
    Inside `aiozarr.read_many` or `aiozarr.batch()` the read is handed over, read with
    the others (`engine/gathering.py`).
    """
    together = gathering()
    if together is not None:
        missing = await together.join(array, projections, out)
        if missing is not None:
            return missing
    tried = 0
    if progress is None and reads_inline(array, len(projections)):
        missing = _read_inline(array, projections, out)
        if missing is not None:
            return missing
        tried = 1  # its shard went stale: the awaited retries keep writers out
    with READS.counted() as alone:
        return await _read_awaited(array, projections, out, progress, alone, tried)


async def _read_awaited(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    out: np.ndarray,
    progress: ProgressCallback | None,
    alone: bool,
    tried: int = 0,
) -> frozenset[str]:
    """`read` through the store's awaited requests (`alone`: no other read in progress
    in the process as it began; `tried`: the stale tries made already, inline)."""
    counter = ChunkProgress(len(projections), progress)
    settings = ReadSettings.of(array.store)
    memory = FreedMemory(out.nbytes)
    cache = None if array.chunk_cache is None else array.chunk_cache.session(array.read_grid)
    here = decodes_here(alone, len(projections) * array.read_chunk_nbytes)
    for tries in range(tried + 1, STALE_RETRIES + 1):
        reads = Reads(array, out, counter, settings, memory, cache=cache, decode_here=here)
        try:
            async with writers_kept_out([(array, projections)], retry=tries > 1):
                with unwrap_group():
                    await _read_once(reads, projections)
            break
        except StaleIndexError as exc:
            forget_stale(array, exc, tries)
    await memory.give_back()
    return frozenset(reads.missing)


async def _read_once(reads: Reads, projections: Sequence[ChunkProjection]) -> None:
    if reads.cache is not None:  # chunks the cache serves cost no request
        projections = await serve_cached(reads, reads.cache, projections)
    ready, indexed = plan_reads(reads.array, projections)
    at_once, in_parts = _parts_where_they_pay(reads, ready)
    steps: list[Callable[[], Awaitable[None]]] = []
    if at_once:
        steps.append(partial(_fetch_at_once, reads, at_once))
    steps.extend(partial(_read_shard_in_parts, reads, shard) for shard in in_parts)
    if indexed:
        steps.append(partial(_read_indexed, reads, indexed))
    if len(steps) == 1:  # the common case: no task group to run
        await steps[0]()
        return
    async with anyio.create_task_group() as tg:
        for step in steps:
            tg.start_soon(step)


def _parts_where_they_pay(reads: Reads, ready: list[Fetch]) -> tuple[list[Fetch], list[WholeShard]]:
    """`ready` split into what is fetched one request each and the shards read in parts:
    those the request shape reads in more than one request (a read of few large
    shards, while the store has few requests in flight)."""
    whole = [f for f in ready if isinstance(f, WholeShard)]
    if not whole:
        return ready, []
    busy = reads.array.store.runtime.requests.inflight
    counts = reads.settings.shape.counts([w.size for w in whole], busy)
    in_parts = [w for w, count in zip(whole, counts, strict=True) if count > 1]
    if not in_parts:
        return ready, []
    apart = {id(w) for w in in_parts}
    return [f for f in ready if id(f) not in apart], in_parts


async def _fetch_at_once(reads: Reads, fetches: list[Fetch]) -> None:
    """`_fetch_and_decode` of what `plan_reads` fetches at once; a shard needed whole
    refused as too large starts the read over, by its index (`refused_whole`)."""
    try:
        with unwrap_group():  # the refusal comes out of the stream's task group
            await _fetch_and_decode(reads, fetches)
    except ValueTooLargeError as error:
        refused_whole([(reads.array, f) for f in fetches], error)
        raise


async def _read_indexed(reads: Reads, shards: list[ShardSelection]) -> None:
    """Shards read by their index: one batch for the indexes not cached, then one
    stream for every chunk they locate."""
    indexes = await shard_indexes(reads.array, shards)
    check_pinned(reads, indexes)
    reads.missing.update(key for key, index in indexes.items() if index is None)
    located, missing = locate(shards, indexes, reads.settings.unbounded_value_bytes)
    for projection in missing:
        reads.fill(projection)
    if located:
        await _fetch_and_decode(reads, located)


async def _fetch_and_decode(reads: Reads, fetches: Sequence[Fetch]) -> None:
    """Fetch `fetches` and decode each answer (missing: the fill value) as it lands."""
    array = reads.array

    async def decode(burst: Answers) -> None:
        jobs = []
        fetched = 0
        for i, data, version in burst:
            if reads.pinned:
                check_answer(reads, fetches[i].key, data, version)
            if data is None:
                reads.missing.add(fetches[i].key)
            fetched += 0 if data is None else memoryview(data).nbytes
            for chunk, chunk_data in fetches[i].expand(array, data, version):
                if chunk_data is None:
                    reads.fill(chunk.projection)
                else:
                    jobs.append(DecodeJob(chunk, chunk_data, version))
        await reads.decode(jobs)
        await reads.memory.decoded(fetched)

    await _stream_in_batches(reads, fetches, decode)


async def _stream_in_batches(
    reads: Reads, fetches: Sequence[Fetch], on_answers: Callable[[Answers], Awaitable[None]]
) -> None:
    """Fetch `fetches` within the store's byte budget (`engine/streaming.py`); run
    `on_answers` on each burst that lands."""
    store = reads.array.store
    unbounded = reads.settings.unbounded_value_bytes
    sizes = [f.size for f in fetches]
    if len(fetches) == 1 and sizes[0] <= reads.settings.shape.part_bytes:
        # the common tiny read: no stream, no task group
        request = fetches[0].request(unbounded)
        answer = await store.get_versioned(
            request.key, request.byte_range, max_bytes=request.max_bytes
        )
        await on_answers([(0, None, None) if answer is None else (0, *answer)])
        return
    requests = [f.request(unbounded) for f in fetches]
    await stream_in_batches(store, requests, sizes, reads.settings.shape, on_answers)


async def _read_shard_in_parts(reads: Reads, whole: WholeShard) -> None:
    """A shard needed whole that may be larger than a part, its index not cached.

    Its index and its first parts, up to a guess of its stored size (`parts_ahead`),
    are asked for at once. When the index lands, the chunks those parts hold are
    decoded as the parts holding them land, parts past the shard's data are dropped,
    and the chunks past the guess go out as coalesced ranges cut into parts, each
    decoded as it lands. Every byte of the shard is read once, but its index and a chunk
    across the end of the guess (their bytes in the parts ahead are read again).
    """
    array = reads.array
    store = array.store
    shard = whole.shard
    shape = reads.settings.shape
    count = shape.parts_ahead(shard.layout.nbytes, store.runtime.bytes.capacity)
    ahead = PartsAhead(reads, shard.key, shape.part_bytes, count)
    try:
        async with anyio.create_task_group() as tg:
            for i in range(ahead.count):
                tg.start_soon(ahead.fetch, i)
            indexes = await shard_indexes(array, [shard])
            if indexes[shard.key] is None:  # no shard: nothing the parts hold is needed
                reads.missing.add(shard.key)
                ahead.close()
            located, missing = locate([shard], indexes, reads.settings.unbounded_value_bytes)
            for projection in missing:
                reads.fill(projection)
            held: list[LocatedChunk] = []
            rest: list[LocatedChunk] = []
            for chunk in located:
                (held if ahead.holds(chunk) else rest).append(chunk)
            ahead.keep(held)  # before `rest` waits for the bytes of parts it does not need
            if held:
                tg.start_soon(ahead.decode_as_parts_land, held)
            if rest:
                await _fetch_and_decode(reads, rest)
    finally:
        ahead.close()


# Decoded bytes a read of in-process values may decode on the calling thread: below this a
# thread hop costs about as much as the decoding (benchmarks: memory-point workload).
INLINE_READ_BYTES = 1 << 20


def reads_inline(array: StoredArray, nchunks: int) -> bool:
    """Whether a read of `nchunks` chunks is done by `read_inline`: the store holds its
    values in this process and there is little to decode."""
    return array.store.reads_inline and nchunks * array.read_chunk_nbytes <= INLINE_READ_BYTES


def read_inline(
    array: StoredArray, plan: Callable[[], Indexer], what: Callable[[], str]
) -> tuple[Indexer, np.ndarray] | None:
    """A selection read on the calling thread when `reads_inline` says it may be:
    `(indexer, out)`, its plan and a new output holding the values; None when it may
    not, or when a shard went stale under it (then `read` reads it).

    `plan()` plans the selection; it is called only for a store that reads inline, so
    asking costs any other store no planning (the sync facade asks before every read).
    The output is made only for a read done here (`what()` names the array in the error
    when it cannot fit).
    """
    if not array.store.reads_inline:
        return None
    indexer = plan()
    if not reads_inline(array, len(indexer)):
        return None
    out = empty_output(indexer.shape, array.meta.dtype, what)
    if _read_inline(array, list(indexer), out) is None:
        return None
    return indexer, out


def _read_inline(
    array: StoredArray, projections: Sequence[ChunkProjection], out: np.ndarray
) -> frozenset[str] | None:
    """`read` on the calling thread, chunk after chunk: no task, no thread hop.

    Only for stores that `reads_inline` (values in memory), where each step of `read`
    would cost more in scheduling than in work. The plan is `read`'s; only the fetching
    differs. None where a shard was rewritten under it: a retry must hold the writers'
    locks of its shards (`writers_kept_out`), which only an awaited read can wait for;
    retried here without them, threads of this process rewriting a shard staled every
    try and the read failed ("rewritten while it was read, 5 times in a row"). A read
    that starts over only to read another way (a shard by its index) does so here.
    """
    for tries in range(1, STALE_RETRIES + 1):
        try:
            return _read_inline_once(array, projections, out)
        except (WholeShardRefusedError, UnsizedSpanError) as exc:
            forget_stale(array, exc, tries)
        except StaleIndexError as exc:
            forget_stale(array, exc, tries)
            return None
    raise AssertionError("unreachable: the last stale try raises")


def _read_inline_once(
    array: StoredArray, projections: Sequence[ChunkProjection], out: np.ndarray
) -> frozenset[str]:
    unbounded = unbounded_value_bytes()
    ready, indexed = plan_reads(array, projections)
    indexes = {s.key: _index_inline(array, s) for s in indexed}
    absent = {key for key, index in indexes.items() if index is None}
    located, missing = locate(indexed, indexes, unbounded)
    for projection in missing:
        fill_at(out, projection.out_selection, array.fill_value)
    store = array.store
    fetches: list[Fetch] = [*ready, *located]
    for fetch in fetches:
        request = fetch.request(unbounded)
        answer = store.get_inline(request.key, request.byte_range)
        if answer is None:
            data, version = None, None
            absent.add(request.key)
        else:
            data, version = answer
            if request.max_bytes is not None:  # refused as a file or object would be
                try:
                    check_size(request.key, memoryview(data).nbytes, request.max_bytes, store)
                except ValueTooLargeError as error:
                    refused_whole([(array, fetch)], error)
                    raise
        for chunk, chunk_data in fetch.expand(array, data, version):
            if chunk_data is None:
                fill_at(out, chunk.projection.out_selection, array.fill_value)
            else:
                decode_one(chunk, chunk_data, out)
    return frozenset(absent)


def _index_inline(array: StoredArray, shard: ShardSelection) -> LocatedIndex | None:
    """The located index of `shard` (None: missing), from the cache or the store."""
    located = cached_index(array, shard)
    if located is None:
        answer = array.store.get_inline(shard.key, shard.layout.index_range)
        if answer is not None:
            located = index_answered(array, shard.key, shard.layout, answer)
    return located
