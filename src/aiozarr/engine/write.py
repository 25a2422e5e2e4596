"""Run a write: read what a partial update needs (one batch), merge, encode, store.

Every key a write touches is locked for the duration of its read-modify-write, so
concurrent writes from this process to one chunk or shard never lose an update.
Locks are taken in sorted key order, so two writes can never wait on each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import numpy as np

from aiozarr import config
from aiozarr.codecs import CodecChain, ShardLayout
from aiozarr.codecs.sharding import is_fill
from aiozarr.engine.executor import run_codec
from aiozarr.engine.plan import InnerRead, ShardRead, plan_chunks, plan_shards
from aiozarr.engine.progress import Progress, ProgressCallback
from aiozarr.engine.target import StoredArray
from aiozarr.errors import StoreError
from aiozarr.indexing import ChunkProjection
from aiozarr.storage.base import Buffer, RangeRequest

_locks: weakref.WeakKeyDictionary[object, dict[tuple[int, str], anyio.Lock]] = (
    weakref.WeakKeyDictionary()
)


@contextlib.asynccontextmanager
async def locked(store: object, keys: Sequence[str]) -> AsyncIterator[None]:
    """Hold this process's write locks on `keys` of `store` (sorted order: no deadlock)."""
    table = _locks.setdefault(store, {})
    loop_id = id(asyncio.get_running_loop())
    async with contextlib.AsyncExitStack() as stack:
        for key in sorted(set(keys)):
            lock = table.setdefault((loop_id, key), anyio.Lock())
            await stack.enter_async_context(lock)
        yield


def _merge(
    chain: CodecChain,
    existing: Buffer | None,
    key: str,
    fill_value: Any,
    updates: Sequence[tuple[ChunkProjection, np.ndarray]],
) -> np.ndarray:
    """The new chunk: the stored one (or fill) with `updates` applied."""
    complete = any(p.is_complete_chunk for p, _ in updates)
    if existing is None or complete:
        chunk = np.full(chain.spec.shape, fill_value, dtype=chain.spec.dtype)
    else:
        chunk = np.array(chain.decode(existing, key), copy=True)
    for projection, value in updates:
        chunk[projection.chunk_selection] = value[projection.out_selection]
    return chunk


def _encode_chunk(
    chain: CodecChain,
    existing: Buffer | None,
    key: str,
    fill_value: Any,
    updates: Sequence[tuple[ChunkProjection, np.ndarray]],
    write_empty: bool,
) -> Buffer | None:
    """Encoded bytes of the updated chunk, or None when it should not be stored."""
    chunk = _merge(chain, existing, key, fill_value, updates)
    if not write_empty and is_fill(chunk, fill_value):
        return None
    return chain.encode(chunk)


async def write(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    value: np.ndarray,
    progress: ProgressCallback | None = None,
) -> None:
    """Store `value` (shaped like the selection) at the projected chunks.

    `progress(done, total)` is called as each chunk (inner chunk when sharded) is encoded.
    """
    counter = Progress(len(projections), progress)
    layout = array.layout
    if layout is None:
        await _write_chunks(array, projections, value, counter)
    else:
        await _write_shards(array, layout, projections, value, counter)


async def _store(array: StoredArray, encoded: dict[str, Buffer | None]) -> None:
    """Write and delete concurrently; on failure name every key not written."""
    failed: dict[str, BaseException] = {}

    async def one(key: str, data: Buffer | None) -> None:
        try:
            async with array.store.limiter:
                if data is None:
                    await array.store.delete(key)
                else:
                    await array.store.set(key, data)
        except Exception as error:  # collected and raised together below
            failed[key] = error

    try:
        async with anyio.create_task_group() as tg:
            for key, data in encoded.items():
                tg.start_soon(one, key, data)
    finally:
        for key in encoded:
            array.index_cache.invalidate(key)
    if failed:
        first = next(iter(failed.values()))
        keys = ", ".join(sorted(failed))
        raise StoreError(
            f"write failed for {len(failed)} of {len(encoded)} chunks ({keys}): {first}"
        ) from first


async def _write_chunks(
    array: StoredArray,
    projections: Sequence[ChunkProjection],
    value: np.ndarray,
    progress: Progress,
) -> None:
    writes = plan_chunks(array.meta, array.prefix, projections)
    write_empty = config.get().write_empty_chunks
    async with locked(array.store, [w.key for w in writes]):
        partial = [w.key for w in writes if not w.projection.is_complete_chunk]
        existing = dict(
            zip(
                partial,
                await array.store.get_partial_values([RangeRequest(k) for k in partial]),
                strict=True,
            )
        )
        encoded: dict[str, Buffer | None] = {}

        async def encode(key: str, projection: ChunkProjection) -> None:
            encoded[key] = await run_codec(
                _encode_chunk,
                array.chain,
                existing.get(key),
                key,
                array.fill_value,
                [(projection, value)],
                write_empty,
                nbytes=array.chain.spec.nbytes,
            )
            progress.advance()

        async with anyio.create_task_group() as tg:
            for w in writes:
                tg.start_soon(encode, w.key, w.projection)
        await _store(array, encoded)


async def _write_shards(
    array: StoredArray,
    layout: ShardLayout,
    projections: Sequence[ChunkProjection],
    value: np.ndarray,
    progress: Progress,
) -> None:
    shards = plan_shards(array.meta, layout, array.prefix, projections)
    async with locked(array.store, [s.key for s in shards]):
        # A shard rewritten in full needs nothing from the store; others are read once.
        needed = [s.key for s in shards if not _replaces_whole_shard(s)]
        existing = dict(
            zip(
                needed,
                await array.store.get_partial_values([RangeRequest(k) for k in needed]),
                strict=True,
            )
        )
        encoded: dict[str, Buffer | None] = {}

        async def assemble(shard: ShardRead) -> None:
            encoded[shard.key] = await _encode_shard(
                array, layout, shard, existing.get(shard.key), value, progress
            )

        async with anyio.create_task_group() as tg:
            for shard in shards:
                tg.start_soon(assemble, shard)
        await _store(array, encoded)


def _replaces_whole_shard(shard: ShardRead) -> bool:
    return shard.whole and all(r.projection.is_complete_chunk for r in shard.inner)


async def _encode_shard(
    array: StoredArray,
    layout: ShardLayout,
    shard: ShardRead,
    existing: Buffer | None,
    value: np.ndarray,
    progress: Progress,
) -> Buffer | None:
    """The new bytes of one shard: untouched inner chunks kept as stored, touched re-encoded."""
    chunks: dict[tuple[int, ...], Buffer | None] = {}
    index = None
    view = None
    if existing is not None:
        view = memoryview(existing).cast("B")
        index = layout.index_of_shard(view, shard.key)
        for coords in np.ndindex(*layout.chunks_per_shard):
            byte_range = index.range_of(coords)
            if byte_range is not None:
                start, stop = byte_range.resolve(len(view))
                chunks[coords] = view[start:stop]

    by_inner: dict[tuple[int, ...], list[InnerRead]] = {}
    for inner in shard.inner:
        by_inner.setdefault(inner.inner_coords, []).append(inner)
    write_empty = config.get().write_empty_chunks

    async def encode(coords: tuple[int, ...], reads: list[InnerRead]) -> None:
        chunks[coords] = await run_codec(
            _encode_chunk,
            layout.inner_chain,
            chunks.get(coords),
            shard.key,
            array.fill_value,
            [(r.projection, value) for r in reads],
            write_empty,
            nbytes=layout.inner_chain.spec.nbytes,
        )
        progress.advance(len(reads))

    async with anyio.create_task_group() as tg:
        for coords, reads in by_inner.items():
            tg.start_soon(encode, coords, reads)
    return await run_codec(layout.encode_shard, chunks, nbytes=array.chain.spec.nbytes)
