"""Run a read: shard indexes -> chunk ranges -> decode as answers land -> scatter.

Each stage is one batch across every chunk of the selection:

1. `plan_*` (pure) groups projections by stored object;
2. one `get_partial_values` for every shard index not cached (shards needed whole
   skip it: they are read in one request, index included);
3. one `get_partial_values` for every chunk / inner-chunk range, streamed;
4. each answer is decoded on the codec pool as it lands and scattered into `out`.

Compressed bytes held at once are bounded by the store's byte budget.

A shard index is only good for the version of the shard it was read from
(`engine/located_index.py`): a read that meets bytes of another version starts over.
Decoding is `engine/decoding.py`; the parts of a shard read before its index lands,
`engine/parts_ahead.py`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn

import anyio
import numpy as np

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.codecs import CodecChain, ShardIndex, ShardLayout
from aiozarr.engine.decoding import DecodeJob, Reads, decode_one
from aiozarr.engine.located_index import (
    LocatedIndex,
    StaleIndexError,
    cached_index,
    check_version,
    remember_index,
    shard_indexes,
)
from aiozarr.engine.pages import small_pages
from aiozarr.engine.parts_ahead import PartsAhead, parts_ahead
from aiozarr.engine.plan import (
    ChunkRead,
    InnerRead,
    ShardRead,
    batches_by_size,
    plan_chunks,
    plan_shards,
)
from aiozarr.engine.progress import ChunkProgress, ProgressCallback
from aiozarr.engine.stored_array import StoredArray
from aiozarr.errors import (
    SelectionTooLargeError,
    StoreError,
    ValueTooLargeError,
    unwrap_group,
)
from aiozarr.indexing import ChunkProjection
from aiozarr.sizes import human_bytes, memory_bytes
from aiozarr.storage.base import Buffer, RangeRequest, Version, check_size
from aiozarr.storage.ranges import request_counts

# Times a read starts over because a shard was rewritten under it before it fails.
_STALE_RETRIES = 5


def chunk_bound(chain: CodecChain) -> int:
    """The largest value a chunk of `chain` can be stored as: its codecs' bound; where
    the data decides (variable-length types), the read's byte budget
    (`max_inflight_bytes`): a chunk that cannot fit in it cannot be read within it."""
    most = chain.max_encoded_size()
    return config.get().max_inflight_bytes if most is None else most


def shard_bound(layout: ShardLayout) -> int:
    """The largest value a shard of `layout` can be stored as (see `chunk_bound`)."""
    most = layout.max_stored_bytes
    return config.get().max_inflight_bytes if most is None else most


def inner_range(index: ShardIndex, layout: ShardLayout, key: str, coords: Any) -> ByteRange | None:
    """Where inner chunk `coords` lies in shard `key` (None: not stored); a length its
    codecs cannot produce (a corrupt or forged index) raises `ValueTooLargeError`
    before anything is read."""
    byte_range = index.range_of(coords)
    if byte_range is not None and byte_range.length is not None:
        most = chunk_bound(layout.inner_chain)
        if byte_range.length > most:
            raise ValueTooLargeError(
                f"cannot read shard {key!r}: its index says inner chunk {tuple(coords)} is "
                f"{byte_range.length} bytes, more than the {most} its codecs can produce; "
                "it was not read"
            )
    return byte_range


async def read(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    out: np.ndarray,
    progress: ProgressCallback | None = None,
) -> None:
    """Fill `out` with the selected values; `projections` are over `array.read_grid`.

    `progress(done, total)` is called as each chunk (inner chunk when sharded) is finished.
    """
    if progress is None and reads_inline(array, len(projections)):
        read_inline(array, projections, out)
        return
    counter = ChunkProgress(len(projections), progress)
    for tries in range(1, _STALE_RETRIES + 1):
        try:
            with unwrap_group():
                await _read_once(Reads(array, out, counter), projections)
            return
        except StaleIndexError as exc:
            _forget_stale(array, exc, tries)


def _forget_stale(array: StoredArray, stale: StaleIndexError, tries: int) -> None:
    """Forget the index that was stale, so the next try reads it again; after the last
    try, raise a `StoreError` instead. (Every try writes every element of the output.)"""
    array.index_cache.invalidate(stale.key)
    if tries == _STALE_RETRIES:
        raise StoreError(
            f"cannot read shard {stale.key!r}: it was rewritten while it was read, "
            f"{_STALE_RETRIES} times in a row"
        ) from stale


async def _read_once(reads: Reads, projections: Sequence[ChunkProjection]) -> None:
    array = reads.array
    layout = array.layout
    if layout is None:
        await _read_chunks(reads, plan_chunks(array.meta, array.prefix, projections))
        return
    shards = plan_shards(array, projections)
    whole = [s for s in shards if s.whole and _read_in_one_request(array, s)]
    partial = [s for s in shards if not (s.whole and _read_in_one_request(array, s))]
    if not partial:
        await _read_whole_shards(reads, whole)
    elif not whole:
        await _read_partial_shards(reads, layout, partial)
    else:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_whole_shards, reads, whole)
            tg.start_soon(_read_partial_shards, reads, layout, partial)


# Decoded bytes a read of in-process values may decode on the calling thread: below this a
# thread hop costs about as much as the decoding (benchmarks: memory-point workload).
INLINE_READ_BYTES = 1 << 20


def reads_inline(array: StoredArray, nchunks: int) -> bool:
    """Whether a read of `nchunks` chunks is done by `read_inline`: the store holds its
    values in this process and there is little to decode."""
    return array.store.reads_inline and nchunks * array.read_chunk_nbytes <= INLINE_READ_BYTES


def read_inline(
    array: StoredArray, projections: Sequence[ChunkProjection], out: np.ndarray
) -> None:
    """`read` on the calling thread, chunk after chunk: no task, no thread hop.

    Only for stores that `reads_inline` (values in memory), where each step of `read`
    would cost more in scheduling than in work.
    """
    for tries in range(1, _STALE_RETRIES + 1):
        try:
            _read_inline_once(array, projections, out)
            return
        except StaleIndexError as exc:
            _forget_stale(array, exc, tries)


def _read_inline_once(
    array: StoredArray, projections: Sequence[ChunkProjection], out: np.ndarray
) -> None:
    store = array.store
    if array.layout is None:
        for chunk in plan_chunks(array.meta, array.prefix, projections):
            chain = array.chain_for(chunk.projection.chunk_coords)
            answer = store.get_inline(chunk.key)
            data = None if answer is None else answer[0]
            if data is not None:  # in memory already: refused as a file or object would be
                check_size(chunk.key, memoryview(data).nbytes, chunk_bound(chain), store)
            _decode_or_fill(array, chain, data, chunk.key, chunk.projection, out)
        return
    for shard in plan_shards(array, projections):
        layout = shard.layout
        located = cached_index(array, shard.key)
        if located is None:
            answer = store.get_inline(shard.key, layout.index_range)
            if answer is not None:
                index = layout.decode_index(answer[0], shard.key)
                located = remember_index(array, shard.key, index, answer[1])
        for inner in shard.inner:
            byte_range = (
                None
                if located is None
                else inner_range(located.index, layout, shard.key, inner.inner_coords)
            )
            answer = None if byte_range is None else store.get_inline(shard.key, byte_range)
            if answer is not None:
                check_version(located, shard.key, answer[1])  # type: ignore[arg-type]
            data = None if answer is None else answer[0]
            _decode_or_fill(array, layout.inner_chain, data, shard.key, inner.projection, out)


def _decode_or_fill(
    array: StoredArray,
    chain: CodecChain,
    data: Buffer | None,
    key: str,
    projection: ChunkProjection,
    out: np.ndarray,
) -> None:
    if data is None:
        out[projection.out_selection] = array.fill_value
    else:
        decode_one(chain, data, key, projection, out)


def _read_in_one_request(array: StoredArray, shard: ShardRead) -> bool:
    """Whether a shard needed whole is fetched as one object (its index included).

    One GET per shard is the fewest requests that can serve it and saves the index
    round trip. With the index already cached the exact chunk ranges are known, so the
    shard is read as coalesced ranges instead: parts that are decoded as each lands.
    """
    return cached_index(array, shard.key) is None


#: Answers that landed together: (request number, bytes or None if missing, version).
Answers = list[tuple[int, Buffer | None, Version | None]]


async def _stream_in_batches(
    reads: Reads,
    requests: list[RangeRequest],
    sizes: list[int],
    on_answers: Callable[[Answers], Awaitable[None]],
) -> None:
    """Fetch `requests` in budget-sized batches; run `on_answers` on each burst that lands.

    A burst is every answer already waiting when one arrives (e.g. all coalesced ranges
    of one shard), so they can be decoded with one thread hop per codec thread.
    """
    store = reads.array.store
    if len(requests) == 1 and sizes[0] <= _part_bytes(store):
        # the common tiny read: no stream, no task group
        request = requests[0]
        answer = await store.get_versioned(
            request.key, request.byte_range, max_bytes=request.max_bytes
        )
        await on_answers([(0, None, None) if answer is None else (0, *answer)])
        return
    budget = store.runtime.bytes
    batch_bytes = max(budget.capacity // 2, 1)

    async def run_batch(batch: list[int]) -> None:
        # A batch takes its bytes at once, so batches waiting on each other cannot deadlock.
        taken = await budget.acquire(sum(sizes[i] for i in batch))
        try:
            async with (
                anyio.create_task_group() as tg,
                store.stream_versioned_values([requests[i] for i in batch]) as answers,
            ):
                async for j, data, version in answers:
                    burst = [(batch[j], data, version)]
                    while True:
                        try:
                            j, data, version = answers.receive_nowait()
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                        burst.append((batch[j], data, version))
                    tg.start_soon(on_answers, burst)
        finally:
            budget.release(taken)

    batches = list(batches_by_size(sizes, batch_bytes))
    if len(batches) == 1:
        await run_batch(batches[0])
        return
    async with anyio.create_task_group() as tg:
        for batch in batches:
            tg.start_soon(run_batch, batch)


async def _fetch_and_decode(
    reads: Reads,
    chains: Sequence[CodecChain],
    requests: list[RangeRequest],
    projections: list[ChunkProjection],
    sizes: list[int],
    indexes: Sequence[LocatedIndex] | None = None,
) -> None:
    """Fetch chunk bytes and decode each answer (missing: fill value) as it lands;
    `chains[i]` decodes the answer to `requests[i]`, whose range `indexes[i]` gave
    (so the answer must come from that index's version of the shard)."""

    async def decode(burst: Answers) -> None:
        jobs = []
        for i, data, version in burst:
            if indexes is not None:
                check_version(indexes[i], requests[i].key, version)
            if data is None:
                reads.fill(projections[i])
            else:
                jobs.append(DecodeJob(chains[i], data, requests[i].key, projections[i]))
        await reads.decode(jobs)

    await _stream_in_batches(reads, requests, sizes, decode)


async def _read_chunks(reads: Reads, chunks: list[ChunkRead]) -> None:
    # The compressed size is unknown until it arrives; the decoded size bounds it in practice.
    chains = [reads.array.chain_for(c.projection.chunk_coords) for c in chunks]
    await _fetch_and_decode(
        reads,
        chains,
        [
            RangeRequest(c.key, None, chunk_bound(chain))
            for c, chain in zip(chunks, chains, strict=True)
        ],
        [c.projection for c in chunks],
        [chain.spec.nbytes for chain in chains],
    )


def _part_bytes(store: Any) -> int:
    """The part size: requests larger than this are read as concurrent parts."""
    most = store.max_request_bytes
    return config.get().max_request_bytes if most is None else most


def _bound(layout: ShardLayout) -> int:
    """The most bytes a shard of `layout` holds in practice (its chunks uncompressed)."""
    return layout.nbytes + layout.index_size


async def _read_whole_shards(reads: Reads, shards: list[ShardRead]) -> None:
    """Shards needed in full: one request each, or in parts where parts pay
    (`request_counts`: a read of few shards)."""
    store = reads.array.store
    part = _part_bytes(store)
    counts = request_counts(
        [_bound(s.layout) for s in shards],
        part,
        config.get().connection_target,
        store.runtime.requests.inflight,
    )
    large = [s for s, count in zip(shards, counts, strict=True) if count > 1]
    if not large:
        await _read_small_shards(reads, shards)
        return
    small = [s for s, count in zip(shards, counts, strict=True) if count == 1]
    async with anyio.create_task_group() as tg:
        if small:
            tg.start_soon(_read_small_shards, reads, small)
        for shard in large:
            tg.start_soon(_read_shard_in_parts, reads, shard, part)


async def _read_shard_in_parts(reads: Reads, shard: ShardRead, part: int) -> None:
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
    layout = shard.layout
    count = parts_ahead(layout, part, store.runtime.bytes.capacity)
    ahead = PartsAhead(reads, shard.key, layout.inner_chain, part, count)
    try:
        async with anyio.create_task_group() as tg:
            for i in range(ahead.count):
                tg.start_soon(ahead.fetch, i)
            located = (await shard_indexes(array, [(shard.key, layout)]))[shard.key]
            if located is None:  # no shard: every chunk reads as the fill value
                ahead.close()
                for inner in shard.inner:
                    reads.fill(inner.projection)
                return
            index = located.index
            held: list[tuple[InnerRead, ByteRange]] = []
            rest: list[tuple[InnerRead, ByteRange]] = []
            for inner in shard.inner:
                byte_range = inner_range(index, layout, shard.key, inner.inner_coords)
                if byte_range is None:
                    reads.fill(inner.projection)
                elif byte_range.end is not None and byte_range.end <= ahead.end:
                    held.append((inner, byte_range))
                else:
                    rest.append((inner, byte_range))
            tg.start_soon(ahead.decode_as_parts_land, located, held)
            if rest:
                await _fetch_and_decode(
                    reads,
                    [layout.inner_chain] * len(rest),
                    [RangeRequest(shard.key, r) for _, r in rest],
                    [inner.projection for inner, _ in rest],
                    [r.length or 0 for _, r in rest],
                    [located] * len(rest),
                )
    finally:
        ahead.close()


async def _read_small_shards(reads: Reads, shards: list[ShardRead]) -> None:
    """Shards needed in full: one request each, index taken from the shard's own bytes."""
    array = reads.array

    async def decode(burst: Answers) -> None:
        jobs = []
        for i, data, version in burst:
            shard = shards[i]
            layout = shard.layout
            if data is None:
                for inner in shard.inner:
                    reads.fill(inner.projection)
                continue
            index = layout.index_of_shard(data, shard.key)
            remember_index(array, shard.key, index, version)
            view = memoryview(data).cast("B")
            for inner in shard.inner:
                byte_range = index.range_of(inner.inner_coords)
                if byte_range is None:
                    reads.fill(inner.projection)
                    continue
                start, stop = byte_range.resolve(len(view))
                jobs.append(
                    DecodeJob(layout.inner_chain, view[start:stop], shard.key, inner.projection)
                )
        await reads.decode(jobs)

    estimates = [s.layout.nbytes + s.layout.index_size for s in shards]
    requests = [RangeRequest(s.key, None, shard_bound(s.layout)) for s in shards]
    await _stream_in_batches(reads, requests, estimates, decode)


async def _read_partial_shards(reads: Reads, layout: ShardLayout, shards: list[ShardRead]) -> None:
    # Every shard's inner chunks have `layout`'s inner chunk shape, so its inner chain.
    indexes = await shard_indexes(reads.array, [(s.key, s.layout) for s in shards])
    requests: list[RangeRequest] = []
    projections: list[ChunkProjection] = []
    sizes: list[int] = []
    located: list[LocatedIndex] = []
    for shard in shards:
        found = indexes[shard.key]
        for inner in shard.inner:
            byte_range = (
                None
                if found is None
                else inner_range(found.index, shard.layout, shard.key, inner.inner_coords)
            )
            if byte_range is None:
                reads.fill(inner.projection)
                continue
            requests.append(RangeRequest(shard.key, byte_range))
            projections.append(inner.projection)
            sizes.append(byte_range.length or 0)
            located.append(found)  # type: ignore[arg-type]
    if requests:
        chains = [layout.inner_chain] * len(requests)
        await _fetch_and_decode(reads, chains, requests, projections, sizes, located)


def check_output_size(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str]
) -> None:
    """Raise `SelectionTooLargeError` (naming `what()`, the array: called only then) when
    a result of `shape` would not fit in the memory this process may use."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > memory_bytes():
        _too_large(shape, dtype, what, nbytes)


def check_addressable(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str]
) -> None:
    """Raise `SelectionTooLargeError` (naming `what()`) when numpy cannot make even a
    view of `shape` (its size in bytes past the largest `intp`: "array is too big"); a
    write of a scalar broadcasts it to the selection's shape. Larger than memory but
    addressable is left to the write, which goes a chunk at a time."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > np.iinfo(np.intp).max:
        _too_large(shape, dtype, what, nbytes)


def empty_output(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str]
) -> np.ndarray:
    """An uninitialised output array (every element is written by the read); too large
    for memory: `SelectionTooLargeError` naming `what`, before anything is read."""
    check_output_size(shape, dtype, what)
    try:
        return small_pages(np.empty(shape, dtype=dtype))
    except (MemoryError, ValueError):  # numpy: more than this machine or numpy can hold
        _too_large(shape, dtype, what, math.prod(shape) * dtype.itemsize)


def _too_large(
    shape: tuple[int, ...], dtype: np.dtype[Any], what: Callable[[], str], nbytes: int
) -> NoReturn:
    raise SelectionTooLargeError(
        f"{what()}: a selection of shape {tuple(shape)} ({dtype}) is {human_bytes(nbytes)} "
        f"({nbytes} bytes), more than the {human_bytes(memory_bytes())} of memory this "
        "process may use; read or write it in parts (e.g. aiozarr.to_dask)"
    )
