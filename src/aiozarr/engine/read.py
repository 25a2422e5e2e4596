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

from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np

from aiozarr.codecs import CodecChain, ShardIndex, ShardLayout
from aiozarr.engine.executor import run_codec
from aiozarr.engine.limits import budget_for
from aiozarr.engine.plan import (
    ChunkRead,
    InnerRead,
    ShardRead,
    batches_by_size,
    plan_chunks,
    plan_shards,
)
from aiozarr.engine.target import StoredArray
from aiozarr.indexing import ChunkProjection
from aiozarr.storage.base import Buffer, RangeRequest


async def read(array: StoredArray, projections: Sequence[ChunkProjection], out: np.ndarray) -> None:
    """Fill `out` with the selected values; `projections` are over `array.read_chunk_shape`."""
    layout = array.layout
    if layout is None:
        await _read_chunks(array, plan_chunks(array.meta, array.prefix, projections), out)
        return
    shards = plan_shards(array.meta, layout, array.prefix, projections)
    whole = [s for s in shards if s.whole]
    partial = [s for s in shards if not s.whole]
    async with anyio.create_task_group() as tg:
        if whole:
            tg.start_soon(_read_whole_shards, array, layout, whole, out)
        if partial:
            tg.start_soon(_read_partial_shards, array, layout, partial, out)


def _scatter(out: np.ndarray, projection: ChunkProjection, chunk: np.ndarray) -> None:
    out[projection.out_selection] = chunk[projection.chunk_selection]


def _fill(array: StoredArray, out: np.ndarray, projection: ChunkProjection) -> None:
    out[projection.out_selection] = array.fill_value


def _decode_into(
    chain: CodecChain, data: Buffer, key: str, out: np.ndarray, projection: ChunkProjection
) -> None:
    if projection.is_complete_chunk:
        chain.decode_into(data, out[projection.out_selection], key)
    else:
        _scatter(out, projection, chain.decode(data, key))


async def _fetch_and_decode(
    array: StoredArray,
    chain: CodecChain,
    requests: list[RangeRequest],
    projections: list[ChunkProjection],
    sizes: list[int],
    out: np.ndarray,
) -> None:
    """Fetch `requests` in budget-sized batches and decode each answer as it lands."""
    budget = budget_for(array.store)
    batch_bytes = max(budget.capacity // 2, 1)
    decoded_nbytes = chain.spec.nbytes

    async def decode_one(i: int, data: Buffer | None) -> None:
        if data is None:
            _fill(array, out, projections[i])
        else:
            await run_codec(
                _decode_into,
                chain,
                data,
                requests[i].key,
                out,
                projections[i],
                nbytes=decoded_nbytes,
            )

    async def run_batch(batch: list[int]) -> None:
        # A batch takes its bytes at once, so batches waiting on each other cannot deadlock.
        taken = await budget.acquire(sum(sizes[i] for i in batch))
        try:
            async with (
                anyio.create_task_group() as tg,
                array.store.stream_partial_values([requests[i] for i in batch]) as answers,
            ):
                async for j, data in answers:
                    tg.start_soon(decode_one, batch[j], data)
        finally:
            await budget.release(taken)

    async with anyio.create_task_group() as tg:
        for batch in batches_by_size(sizes, batch_bytes):
            tg.start_soon(run_batch, batch)


async def _read_chunks(array: StoredArray, reads: list[ChunkRead], out: np.ndarray) -> None:
    # The compressed size is unknown until it arrives; the decoded size bounds it in practice.
    estimate = array.chain.spec.nbytes
    await _fetch_and_decode(
        array,
        array.chain,
        [RangeRequest(r.key) for r in reads],
        [r.projection for r in reads],
        [estimate] * len(reads),
        out,
    )


async def _read_whole_shards(
    array: StoredArray, layout: ShardLayout, shards: list[ShardRead], out: np.ndarray
) -> None:
    """Shards needed in full: one request each, index taken from the shard's own bytes."""
    budget = budget_for(array.store)
    batch_bytes = max(budget.capacity // 2, 1)
    estimate = array.chain.spec.nbytes + layout.index_size

    async def decode_shard(shard: ShardRead, data: Buffer | None) -> None:
        if data is None:
            for inner in shard.inner:
                _fill(array, out, inner.projection)
            return
        index = layout.index_of_shard(data, shard.key)
        array.index_cache.put(shard.key, index, index.nbytes)
        view = memoryview(data).cast("B")
        async with anyio.create_task_group() as tg:
            for inner in shard.inner:
                tg.start_soon(_decode_inner, array, layout, shard.key, index, view, inner, out)

    async def run_batch(batch: list[int]) -> None:
        taken = await budget.acquire(estimate * len(batch))
        try:
            async with (
                anyio.create_task_group() as tg,
                array.store.stream_partial_values(
                    [RangeRequest(shards[i].key) for i in batch]
                ) as answers,
            ):
                async for j, data in answers:
                    tg.start_soon(decode_shard, shards[batch[j]], data)
        finally:
            await budget.release(taken)

    async with anyio.create_task_group() as tg:
        for batch in batches_by_size([estimate] * len(shards), batch_bytes):
            tg.start_soon(run_batch, batch)


async def _decode_inner(
    array: StoredArray,
    layout: ShardLayout,
    key: str,
    index: ShardIndex,
    shard: memoryview,
    inner: InnerRead,
    out: np.ndarray,
) -> None:
    byte_range = index.range_of(inner.inner_coords)
    if byte_range is None:
        _fill(array, out, inner.projection)
        return
    start, stop = byte_range.resolve(len(shard))
    await run_codec(
        _decode_into,
        layout.inner_chain,
        shard[start:stop],
        key,
        out,
        inner.projection,
        nbytes=layout.inner_chain.spec.nbytes,
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


async def _read_partial_shards(
    array: StoredArray, layout: ShardLayout, shards: list[ShardRead], out: np.ndarray
) -> None:
    indexes = await shard_indexes(array, layout, [s.key for s in shards])
    requests: list[RangeRequest] = []
    projections: list[ChunkProjection] = []
    sizes: list[int] = []
    for shard in shards:
        index = indexes[shard.key]
        for inner in shard.inner:
            byte_range = None if index is None else index.range_of(inner.inner_coords)
            if byte_range is None:
                _fill(array, out, inner.projection)
                continue
            requests.append(RangeRequest(shard.key, byte_range))
            projections.append(inner.projection)
            sizes.append(byte_range.length or 0)
    if requests:
        await _fetch_and_decode(array, layout.inner_chain, requests, projections, sizes, out)


def empty_output(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """An uninitialised output array (every element is written by the read)."""
    return np.empty(shape, dtype=dtype)
