"""Run a read: shard indexes -> chunk ranges -> decode as answers land -> scatter.

Each stage is one batch across every chunk of the selection:

1. `plan_*` (pure) groups projections by stored object;
2. one `get_partial_values` for every shard index not cached (shards needed whole
   skip it: they are read in one request, index included);
3. one `get_partial_values` for every chunk / inner-chunk range, streamed;
4. each answer is decoded on the codec pool as it lands and scattered into `out`.

Compressed bytes held at once are bounded by the store's byte budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

from aiozarr.codecs import CodecChain, ShardIndex, ShardLayout
from aiozarr.engine.executor import run_codec
from aiozarr.engine.limits import budget_for
from aiozarr.engine.plan import (
    ChunkRead,
    ShardRead,
    batches_by_size,
    plan_chunks,
    plan_shards,
)
from aiozarr.engine.progress import Progress, ProgressCallback
from aiozarr.engine.target import StoredArray
from aiozarr.indexing import ChunkProjection
from aiozarr.storage.base import Buffer, RangeRequest


async def read(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    out: np.ndarray,
    progress: ProgressCallback | None = None,
) -> None:
    """Fill `out` with the selected values; `projections` are over `array.read_chunk_shape`.

    `progress(done, total)` is called as each chunk (inner chunk when sharded) is finished.
    """
    reads = _Reads(array, out, Progress(len(projections), progress))
    layout = array.layout
    if layout is None:
        await _read_chunks(reads, plan_chunks(array.meta, array.prefix, projections))
        return
    shards = plan_shards(array.meta, layout, array.prefix, projections)
    whole = [s for s in shards if s.whole]
    partial = [s for s in shards if not s.whole]
    async with anyio.create_task_group() as tg:
        if whole:
            tg.start_soon(_read_whole_shards, reads, layout, whole)
        if partial:
            tg.start_soon(_read_partial_shards, reads, layout, partial)


@dataclass(frozen=True, slots=True)
class _Reads:
    """What every stage of one read shares: the array, the output, the progress."""

    array: StoredArray
    out: np.ndarray
    progress: Progress

    def fill(self, projection: ChunkProjection) -> None:
        self.out[projection.out_selection] = self.array.fill_value
        self.progress.advance()

    async def decode(
        self, chain: CodecChain, data: Buffer, key: str, projection: ChunkProjection
    ) -> None:
        await run_codec(
            _decode_into, chain, data, key, self.out, projection, nbytes=chain.spec.nbytes
        )
        self.progress.advance()


def _decode_into(
    chain: CodecChain, data: Buffer, key: str, out: np.ndarray, projection: ChunkProjection
) -> None:
    if projection.is_complete_chunk:
        chain.decode_into(data, out[projection.out_selection], key)
    else:
        out[projection.out_selection] = chain.decode(data, key)[projection.chunk_selection]


async def _stream_in_batches(
    reads: _Reads,
    requests: list[RangeRequest],
    sizes: list[int],
    on_answer: Callable[[int, Buffer | None], Awaitable[None]],
) -> None:
    """Fetch `requests` in budget-sized batches; run `on_answer(i, data)` as each lands."""
    budget = budget_for(reads.array.store)
    batch_bytes = max(budget.capacity // 2, 1)

    async def run_batch(batch: list[int]) -> None:
        # A batch takes its bytes at once, so batches waiting on each other cannot deadlock.
        taken = await budget.acquire(sum(sizes[i] for i in batch))
        try:
            async with (
                anyio.create_task_group() as tg,
                reads.array.store.stream_partial_values([requests[i] for i in batch]) as answers,
            ):
                async for j, data in answers:
                    tg.start_soon(on_answer, batch[j], data)
        finally:
            await budget.release(taken)

    async with anyio.create_task_group() as tg:
        for batch in batches_by_size(sizes, batch_bytes):
            tg.start_soon(run_batch, batch)


async def _fetch_and_decode(
    reads: _Reads,
    chain: CodecChain,
    requests: list[RangeRequest],
    projections: list[ChunkProjection],
    sizes: list[int],
) -> None:
    """Fetch chunk bytes and decode each answer (missing: fill value) as it lands."""

    async def decode_one(i: int, data: Buffer | None) -> None:
        if data is None:
            reads.fill(projections[i])
        else:
            await reads.decode(chain, data, requests[i].key, projections[i])

    await _stream_in_batches(reads, requests, sizes, decode_one)


async def _read_chunks(reads: _Reads, chunks: list[ChunkRead]) -> None:
    # The compressed size is unknown until it arrives; the decoded size bounds it in practice.
    chain = reads.array.chain
    await _fetch_and_decode(
        reads,
        chain,
        [RangeRequest(c.key) for c in chunks],
        [c.projection for c in chunks],
        [chain.spec.nbytes] * len(chunks),
    )


async def _read_whole_shards(reads: _Reads, layout: ShardLayout, shards: list[ShardRead]) -> None:
    """Shards needed in full: one request each, index taken from the shard's own bytes."""
    array = reads.array

    async def decode_shard(i: int, data: Buffer | None) -> None:
        shard = shards[i]
        if data is None:
            for inner in shard.inner:
                reads.fill(inner.projection)
            return
        index = layout.index_of_shard(data, shard.key)
        array.index_cache.put(shard.key, index, index.nbytes)
        view = memoryview(data).cast("B")
        async with anyio.create_task_group() as tg:
            for inner in shard.inner:
                byte_range = index.range_of(inner.inner_coords)
                if byte_range is None:
                    reads.fill(inner.projection)
                    continue
                start, stop = byte_range.resolve(len(view))
                tg.start_soon(
                    reads.decode, layout.inner_chain, view[start:stop], shard.key, inner.projection
                )

    estimate = array.chain.spec.nbytes + layout.index_size
    await _stream_in_batches(
        reads, [RangeRequest(s.key) for s in shards], [estimate] * len(shards), decode_shard
    )


async def shard_indexes(
    array: StoredArray, layout: ShardLayout, keys: Sequence[str]
) -> dict[str, ShardIndex | None]:
    """The index of each shard (None: the shard is missing): cache first, then one batch."""
    indexes: dict[str, ShardIndex | None] = {}
    missing: list[str] = []
    for key in keys:
        cached = array.index_cache.get(key)
        if cached is None:
            missing.append(key)
        else:
            indexes[key] = cached
    if missing:
        answers = await array.store.get_partial_values(
            [RangeRequest(key, layout.index_range) for key in missing]
        )
        for key, data in zip(missing, answers, strict=True):
            if data is None:
                indexes[key] = None
                continue
            index = layout.decode_index(data, key)
            array.index_cache.put(key, index, index.nbytes)
            indexes[key] = index
    return indexes


async def _read_partial_shards(reads: _Reads, layout: ShardLayout, shards: list[ShardRead]) -> None:
    indexes = await shard_indexes(reads.array, layout, [s.key for s in shards])
    requests: list[RangeRequest] = []
    projections: list[ChunkProjection] = []
    sizes: list[int] = []
    for shard in shards:
        index = indexes[shard.key]
        for inner in shard.inner:
            byte_range = None if index is None else index.range_of(inner.inner_coords)
            if byte_range is None:
                reads.fill(inner.projection)
                continue
            requests.append(RangeRequest(shard.key, byte_range))
            projections.append(inner.projection)
            sizes.append(byte_range.length or 0)
    if requests:
        await _fetch_and_decode(reads, layout.inner_chain, requests, projections, sizes)


def empty_output(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """An uninitialised output array (every element is written by the read)."""
    return np.empty(shape, dtype=dtype)
