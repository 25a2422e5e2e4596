"""Many selections, on any arrays in one or more stores, read as one plan.

`read_many` reads every selection together: chunks a chunk cache holds are served first
(per array); then each store gets one batch of the shard indexes not cached, of every
array in it, beside one stream of the shards needed whole; as each burst of indexes
lands, one stream per store fetches the chunks they locate for every selection, ranges
of one object coalesced across selections. Each answer is decoded into the output of
the selection that asked for it.

How the reads of many `getitem` calls reach `read_many` is `engine/gathering.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import partial

import anyio
import numpy as np

from aiozarr.engine.cached_reads import check_answer, serve_cached, stale_pins
from aiozarr.engine.chunk_cache import key_space
from aiozarr.engine.decoding import DecodeJob, Reads, decode_job
from aiozarr.engine.executor import READS, run_codec, run_in_groups
from aiozarr.engine.freed_memory import FreedMemory
from aiozarr.engine.located import Fetch, locate, plan_reads, refused_whole
from aiozarr.engine.located_index import (
    STALE_RETRIES,
    LocatedIndex,
    StaleIndexError,
    cached_index,
    forget_stale,
    index_answered,
    writers_kept_out,
)
from aiozarr.engine.plan import ShardSelection
from aiozarr.engine.progress import ChunkProgress
from aiozarr.engine.settings import ReadSettings
from aiozarr.engine.stored_array import StoredArray
from aiozarr.engine.streaming import Answers, stream_in_batches
from aiozarr.engine.streaming import landed as stream_landed
from aiozarr.errors import ValueTooLargeError, unwrap_group
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.protocol import RangeRequest, Store, Version


@dataclass(frozen=True, slots=True)
class Selected:
    """One selection to read: its array, its projections (over `array.read_grid`) and
    the output they fill."""

    array: StoredArray
    projections: Sequence[ChunkProjection]
    out: np.ndarray


async def read_many(selected: Sequence[Selected]) -> list[frozenset[str]]:
    """Fill every selection's output; per selection, the keys of the stored objects it
    needs that the store does not hold (as `engine/read.py::read` returns)."""
    with READS.counted():  # a read beside it does not decode on the loop (`decodes_here`)
        return await _read_many(selected)


async def _read_many(selected: Sequence[Selected]) -> list[frozenset[str]]:
    sessions = [
        None if (cache := s.array.chunk_cache) is None else cache.session(s.array.read_grid)
        for s in selected
    ]
    for tries in range(1, STALE_RETRIES + 1):
        reads = [
            Reads(
                s.array,
                s.out,
                ChunkProgress(len(s.projections), None),
                ReadSettings.of(s.array.store),
                FreedMemory(s.out.nbytes),
                cache=session,
            )
            for s, session in zip(selected, sessions, strict=True)
        ]
        try:
            async with writers_kept_out(
                [(s.array, s.projections) for s in selected], retry=tries > 1
            ):
                with unwrap_group():
                    await _read_once(reads, [s.projections for s in selected])
            break
        except StaleIndexError as exc:
            # the arrays whose shards lie under that key's prefix (the error names no
            # store: arrays at one path of two stores both take it)
            found = {id(s.array): s.array for s in selected if exc.key.startswith(s.array.prefix)}
            for array in found.values():
                forget_stale(array, exc, tries)
    for r in reads:
        await r.memory.give_back()
    return [frozenset(r.missing) for r in reads]


#: What one selection fetches: its reads and one fetch.
_Item = tuple[Reads, Fetch]

#: The version `_OneVersion` notes for an object the store does not hold.
_GONE = object()


class _OneVersion:
    """The version each object was read at, by any selection of one try, by its full
    name in its key space (`key_space`: stores over the same data name it alike): one
    selection's whole shard and another's index of it (or two selections' requests for
    one chunk) went out apart, and a writer between them left the selections with two
    versions of it. Another version starts the read over, as a stale index does."""

    def __init__(self, reads: list[Reads]) -> None:
        self._reads = reads
        self._named = {id(r): key_space(r.array.store) for r in reads}
        self._seen: dict[tuple[Hashable, str], object] = {}
        #: shards answered in another version than the cache served part of them from
        self.stale: list[str] = []

    def stale_answer(self, r: Reads, key: str) -> None:
        """`key` of `r`'s store was answered in another version than the one the cache
        served part of it from (`check_answer`): its cached chunks are forgotten in every
        cache of the read, and the read starts over once every answer is in, without
        any shard found so (a shard read whole has no index to show it stale first:
        one such shard per try spent the retries on a few shards rewritten once)."""
        space, prefix = self._named[id(r)]
        _forget(self._reads, space, [prefix + key])
        self.stale.append(key)

    def note(self, r: Reads, key: str, version: object) -> None:
        """`key` of `r`'s store was read at `version` (`_GONE`: missing; None: a store
        that tells none, nothing to compare)."""
        if version is None:
            return
        space, prefix = self._named[id(r)]
        if self._seen.setdefault((space, prefix + key), version) != version:
            raise StaleIndexError(key, f"{key!r} was rewritten between two selections' reads")


async def _read_once(reads: list[Reads], projections: list[Sequence[ChunkProjection]]) -> None:
    """Cache, then the indexes of all beside the whole shards of all, then the chunks."""
    left = list(projections)
    if any(r.cache is not None for r in reads):

        async def from_cache(i: int, r: Reads) -> None:
            assert r.cache is not None
            left[i] = await serve_cached(r, r.cache, projections[i])

        async with anyio.create_task_group() as tg:
            for i, r in enumerate(reads):
                if r.cache is not None:
                    tg.start_soon(from_cache, i, r)
        _share_pins(reads)
    ready: list[_Item] = []
    indexed: list[tuple[Reads, ShardSelection]] = []
    for r, p in zip(reads, left, strict=True):
        at_once, shards = plan_reads(r.array, p)
        ready.extend((r, f) for f in at_once)
        indexed.extend((r, s) for s in shards)
    seen = _OneVersion(reads)
    async with anyio.create_task_group() as tg:
        if ready:
            tg.start_soon(_fetch_all, ready, seen)
        if indexed:
            by_slot: dict[_Slot, list[tuple[Reads, ShardSelection]]] = {}
            for r, shard in indexed:
                by_slot.setdefault((id(r.array), shard.key), []).append((r, shard))

            stale: list[str] = []

            def landed(indexes: dict[_Slot, LocatedIndex | None]) -> None:
                pairs = [pair for slot in indexes for pair in by_slot[slot]]
                stale.extend(_stale(reads, pairs, indexes))
                if stale:  # no more fetched: the read starts over once all have landed
                    return
                located = _locate(pairs, indexes, seen)
                if located:
                    tg.start_soon(_fetch_all, located, seen)

            await _indexes(by_slot, landed)
            if stale:  # every stale shard forgotten at once, not a burst's per try
                raise StaleIndexError(stale[0])
    if seen.stale:
        raise StaleIndexError(seen.stale[0])


def _share_pins(reads: list[Reads]) -> None:
    """Every selection reads a shard from the version the cache served any selection's
    chunks of it from (`Reads.pinned`), whatever handle it reads through: stores over the
    same data name a shard alike (`key_space`), equal or not (a read-only handle's store
    is not equal to a writable one's). Two selections served two versions of one shard
    start the read over (`StaleIndexError`, which forgets them)."""
    named = [key_space(r.array.store) for r in reads]
    pins: dict[Hashable, dict[str, Version]] = {}  # by space, by full name
    clashes: dict[tuple[Hashable, str], str] = {}  # a full name, and a key naming it
    for r, (space, prefix) in zip(reads, named, strict=True):
        held = pins.setdefault(space, {})
        for key, version in r.pinned.items():
            if held.setdefault(prefix + key, version) != version:
                clashes[space, prefix + key] = key
    for r, (space, prefix) in zip(reads, named, strict=True):
        mine = {n[len(prefix) :]: v for n, v in pins[space].items() if n.startswith(prefix)}
        if clashes and r.cache is not None:  # every clash forgotten at once, not one per try
            gone = [n for s, n in clashes if s == space and n.startswith(prefix)]
            r.cache.cache.forget(*(n[len(prefix) :] for n in gone))
        r.pinned.update(mine)
    if clashes:
        raise StaleIndexError(next(iter(clashes.values())))


def _locate(
    indexed: list[tuple[Reads, ShardSelection]],
    indexes: dict[tuple[int, str], LocatedIndex | None],
    seen: _OneVersion,
) -> list[_Item]:
    """Every chunk the shards of `indexed` locate with their `indexes` (each shard of
    one version in every selection: `seen`); chunks not stored are filled now."""
    items: list[_Item] = []
    for r, shard in indexed:
        found = {shard.key: indexes[id(r.array), shard.key]}
        index = found[shard.key]
        seen.note(r, shard.key, _GONE if index is None else index.version)
        if index is None:
            r.missing.add(shard.key)
        located, missing = locate([shard], found, r.settings.unbounded_value_bytes)
        for projection in missing:
            r.fill(projection)
        items.extend((r, chunk) for chunk in located)
    return items


def _stale(
    reads: list[Reads],
    indexed: list[tuple[Reads, ShardSelection]],
    indexes: dict[tuple[int, str], LocatedIndex | None],
) -> list[str]:
    """The shards of `indexed` the cache served chunks of whose `indexes` are of another
    version, their cached chunks forgotten (`stale_pins`) in every selection's cache: a
    pin may be another handle's (`_share_pins`), whose cache would serve them again, one
    shard forgotten per try (`forget_stale`) until the retries ran out."""
    stale: list[str] = []
    for r in {id(r): r for r, _ in indexed if r.pinned}.values():  # the cache served some
        of_array = {key: found for (array, key), found in indexes.items() if array == id(r.array)}
        found = stale_pins(r, of_array)
        if found:
            space, prefix = key_space(r.array.store)
            _forget(reads, space, [prefix + key for key in found])
        stale.extend(found)
    return stale


def _forget(reads: list[Reads], space: Hashable, names: list[str]) -> None:
    """Forget the objects of full `names` in `space` (`key_space`) in every cache of
    `reads` over that space."""
    for r in reads:
        if r.cache is None:
            continue
        mine, prefix = key_space(r.array.store)
        if mine == space:
            r.cache.cache.forget(*(n[len(prefix) :] for n in names if n.startswith(prefix)))


def _by_store(items: Sequence[tuple[Reads, object]]) -> dict[Store, list[int]]:
    """Item numbers by store (equal stores: one), each store's in order."""
    groups: dict[Store, list[int]] = {}
    stores: dict[int, Store] = {}  # a store object hashed once per call
    for i, (r, _) in enumerate(items):
        store = r.array.store
        key = stores.setdefault(id(store), store)
        groups.setdefault(key, []).append(i)
    return groups


#: A shard of one array: `(id(array), key)`.
_Slot = tuple[int, str]


async def _indexes(
    by_slot: dict[_Slot, list[tuple[Reads, ShardSelection]]],
    landed: Callable[[dict[_Slot, LocatedIndex | None]], None],
) -> None:
    """Hand `landed` the index of every shard of `by_slot` (None: missing) as it comes:
    those cached at once, then each burst of one batch per store of all the others. A
    shard's chunks go out as soon as its index lands: a late index (the store's tail)
    holds back its own shard's chunks, not every shard's."""
    cached: dict[_Slot, LocatedIndex | None] = {}
    wanted: list[tuple[Reads, ShardSelection]] = []
    for slot, (first, *_) in by_slot.items():
        r, shard = first
        found = cached_index(r.array, shard)
        if found is None:
            wanted.append(first)
        else:
            cached[slot] = found
    if cached:
        landed(cached)

    async def batch(store: Store, numbers: list[int]) -> None:
        requests = [
            RangeRequest(wanted[i][1].key, wanted[i][1].layout.index_range) for i in numbers
        ]
        async with store.stream_versioned_values(requests) as answers:
            async for first in answers:
                found: dict[_Slot, LocatedIndex | None] = {}
                for j, data, version in stream_landed(first, answers):
                    r, shard = wanted[numbers[j]]
                    slot = (id(r.array), shard.key)
                    found[slot] = (
                        None
                        if data is None
                        else index_answered(r.array, shard.key, shard.layout, (data, version))
                    )
                landed(found)

    async with anyio.create_task_group() as tg:
        for store, numbers in _by_store(wanted).items():
            tg.start_soon(batch, store, numbers)


async def _fetch_all(items: list[_Item], seen: _OneVersion) -> None:
    """Fetch `items`, one stream per store (its ranges of one object coalesced whatever
    selection asked for them), and decode each answer into its selection's output."""
    async with anyio.create_task_group() as tg:
        for store, numbers in _by_store(items).items():
            tg.start_soon(_fetch_from, store, [items[i] for i in numbers], seen)


async def _fetch_from(store: Store, items: list[_Item], seen: _OneVersion) -> None:
    """`items` of one store, within its byte budget (`engine/streaming.py`)."""
    requests = [fetch.request(r.settings.unbounded_value_bytes) for r, fetch in items]
    sizes = [fetch.size for _, fetch in items]
    shape = items[0][0].settings.shape
    decode = partial(_decode_burst, items, seen)
    try:
        with unwrap_group():  # the refusal comes out of the stream's task group
            await stream_in_batches(store, requests, sizes, shape, decode)
    except ValueTooLargeError as error:  # a shard needed whole: read it by its index
        refused_whole([(r.array, fetch) for r, fetch in items], error)
        raise


#: One chunk's bytes and every selection that needs them, each with its job (the same
#: bytes in every job).
_Unit = list[tuple[Reads, DecodeJob]]


async def _decode_burst(items: list[_Item], seen: _OneVersion, burst: Answers) -> None:
    """Decode answers that landed together, a thread hop per codec thread for the whole
    burst whatever the selections it serves: a chunk that several selections need (the
    same bytes of one object, decoded by one chain) once for all of them, the rest each
    selection's own."""
    landed: dict[tuple[str, object, object, int], _Unit] = {}
    for i, data, version in burst:
        r, fetch = items[i]
        if r.pinned:
            try:
                check_answer(r, fetch.key, data, version)
            except StaleIndexError:
                seen.stale_answer(r, fetch.key)
                continue
        seen.note(r, fetch.key, _GONE if data is None else version)
        if data is None:
            r.missing.add(fetch.key)
        for chunk, chunk_data in fetch.expand(r.array, data, version):  # type: ignore[arg-type]
            if chunk_data is None:
                r.fill(chunk.projection)
            else:
                # Same bytes, other codecs (another handle's older metadata): another
                # decode. The chain object is its handle's for the chunk's shape.
                slot = (chunk.key, chunk.byte_range, version, id(chunk.chain))
                landed.setdefault(slot, []).append((r, DecodeJob(chunk, chunk_data, version)))
    units: list[_Unit] = []
    for members in landed.values():
        if len(members) > 1 and all(r.cache is None for r, _ in members) and _shareable(members):
            units.append(members)
        else:  # a cached read, or object elements: each its own decode
            units.extend([member] for member in members)
    if units:
        nbytes = sum(members[0][1].chunk.chain.spec.nbytes for members in units)
        await run_in_groups(units, nbytes, _decode_units)


def _shareable(members: _Unit) -> bool:
    """Whether one decode may fill every member's output: not for elements that are
    objects (strings, JSON values), which each output would share with the others, so
    that a caller changing one of its elements would change another caller's; not for
    a span of a chunk (`chunk_parts`), which is not the chunk the chain decodes."""
    chunk = members[0][1].chunk
    return chunk.part is None and not chunk.chain.spec.dtype.hasobject


async def _decode_units(units: Sequence[_Unit]) -> None:
    """Decode each chunk of `units` once, in one codec call, into every output needing it."""
    nbytes = sum(members[0][1].chunk.chain.spec.nbytes for members in units)
    await run_codec(_decode_each, units, nbytes=nbytes)
    for members in units:
        for r, _ in members:
            r.progress.advance()


def _decode_each(units: Sequence[_Unit]) -> None:
    for members in units:
        if len(members) == 1:
            r, job = members[0]
            decode_job(job, r.out, r.cache)
            continue
        first = members[0][1]
        values = first.chunk.chain.decode_transient(first.data, first.chunk.key)
        for r, job in members:
            projection = job.chunk.projection
            r.out[projection.out_selection] = values[projection.chunk_selection]
