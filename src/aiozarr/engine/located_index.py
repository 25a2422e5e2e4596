"""A shard index and the version of the shard it was read from.

An index is only good for the version of the shard it was read from. Indexes are cached
with that version, and every range read with an index must come from the same version:
an answer from another one (the shard was rewritten, by this process or any other) is
never decoded; `check_version` raises `StaleIndexError`, and the read forgets the index,
reads it again and starts over. A read that a cached index says needs none of the
shard's stored chunks fetches nothing to compare versions with: the index is read again
for it (`cached_index`), so chunks another writer stored since are read, not the fill.

An index read with no version (a zarr-python store, an HTTP answer without an ETag) can
never be checked against the bytes read with it later: another handle or process may
have moved every chunk of the shard since. It is used by the read that read it only and
never cached (`remember_index`): an unversioned store pays an index read on every read.

A server whose versions of a shard change while its content does not (a load balancer
over servers that tag one file differently: Apache's inode ETags on two hosts) makes
every such read stale; when the index read again after a stale try was the same bytes
in most tries of the read, its final error says so (`FLAPPING_EVIDENCE`). Versions are
never dropped for it: the same index after a rewrite is also what a rewrite that kept
the layout gives, and a read without a version check can read a rewrite's bytes at the
old offsets (docs/decisions/storage.md, "Versions that change without the content").

A retry holds the write locks of every shard the read needs (`writers_kept_out`):
writers in this process rewriting its shards wait for the retry instead of making it
stale again (one shard or another on each try), and only another process can.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from aiozarr.codecs import ShardIndex, ShardLayout
from aiozarr.engine.plan import ShardSelection, plan_shards
from aiozarr.engine.stored_array import StoredArray
from aiozarr.errors import StoreError
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.policy import KeyLocks, runtime_in_use
from aiozarr.storage.protocol import (
    RangeRequest,
    Store,
    Version,
    Versioned,
    lasting,
    stored_size,
)


class StaleIndexError(Exception):
    """A range came from another version of a shard than its index: read again."""

    def __init__(self, key: str, why: str = "") -> None:
        super().__init__(why or f"shard {key!r} was rewritten while it was read")
        self.key = key


#: Times a read starts over because a shard was rewritten under it before it fails.
STALE_RETRIES = 5


#: Stale tries of one read whose shard's index, read again, was the same before its
#: error says the server's versions may change without its content.
FLAPPING_EVIDENCE = 2


@dataclass
class _Versions:
    """What the stale tries of one array's read showed: the index each shard had when
    it went stale, and how many tries found it the same read again (`same`)."""

    stale: dict[str, ShardIndex] = field(default_factory=dict)
    same: int = 0


# Per array, by its index cache (an array's lives as long as the array).
_VERSIONS: weakref.WeakKeyDictionary[object, _Versions] = weakref.WeakKeyDictionary()


def forget_stale(array: StoredArray, stale: StaleIndexError, tries: int) -> None:
    """Forget the index that was stale, and every other index of the array: a shard
    rewritten since its index was read was most often rewritten with the others (a
    whole-array write by another program), and each stale one left would cost a try.
    The next try reads the indexes it needs again, in one batch; after the last try,
    raise a `StoreError` instead. (Every try writes every element of the output.)"""
    found: LocatedIndex | None = array.index_cache.get(stale.key)
    versions = _VERSIONS.setdefault(array.index_cache, _Versions())
    if tries == 1:  # the evidence counts within one read
        versions.same = 0
    if found is not None:
        versions.stale[stale.key] = found.index
    array.forget(stale.key)
    array.index_cache.clear()
    if tries == STALE_RETRIES:
        why = "it was rewritten while it was read"
        if versions.same >= FLAPPING_EVIDENCE:
            why = (
                "its index was the same each time it was read again: another writer may "
                "keep rewriting it with chunks of the same sizes, or its server's versions "
                "(ETags) change while its content does not (a load balancer over servers "
                "that tag the same file differently?); only in that second case, a store "
                "that tells no versions reads it (a zarr-python store, e.g. "
                "zarr.storage.FsspecStore)"
            )
        raise StoreError(
            f"cannot read shard {stale.key!r}: {why}, {STALE_RETRIES} times in a row"
        ) from stale


def _note_same_index(array: StoredArray, key: str, index: ShardIndex) -> None:
    """Count it where `index`, just read, is the one the stale try before had."""
    versions = _VERSIONS.get(array.index_cache)
    if versions is None:
        return
    before = versions.stale.pop(key, None)
    if before is not None and np.array_equal(before.offsets_and_lengths, index.offsets_and_lengths):
        versions.same += 1


def writers_kept_out(
    reads: Sequence[tuple[StoredArray, Sequence[ChunkProjection]]], retry: bool
) -> contextlib.AbstractAsyncContextManager[None]:
    """Around one try of a read of `reads` (arrays and the projections read of each): on
    a retry (a shard went stale under the try before), the write locks of every shard
    the read needs, in each of the arrays' stores, so no writer of this process can make
    it stale again. None on a first try, and none for a read inside a writer's own
    locked block: taking more locks there could deadlock against another writer's order."""
    if not retry or KeyLocks.holds_any():
        return contextlib.nullcontext()
    return _holding(reads)


@contextlib.asynccontextmanager
async def _holding(
    reads: Sequence[tuple[StoredArray, Sequence[ChunkProjection]]],
) -> AsyncIterator[None]:
    keys: dict[int, tuple[KeyLocks, set[str]]] = {}
    for array, projections in reads:
        if array.layout is not None:  # only a shard's index goes stale
            locks = _writers_locks(array.store)
            held = keys.setdefault(id(locks), (locks, set()))[1]
            held.update(shard.key for shard in plan_shards(array, projections))
    async with contextlib.AsyncExitStack() as stack:
        # tables in one order for every read, as keys within one (no deadlock between
        # two reads of arrays of two stores given in opposite orders)
        for _, (locks, held) in sorted(keys.items()):
            await stack.enter_async_context(locks.hold(held))
        token = _FRESH.set(True)
        try:
            yield
        finally:
            _FRESH.reset(token)


def _writers_locks(store: Store) -> KeyLocks:
    """The write locks writers of `store`'s keys take in this process: a read-only
    store's are those of a writable one over the same data, if one is in use (stores
    compare their flags, so each has a runtime of its own)."""
    if store.read_only:
        with contextlib.suppress(NotImplementedError):
            twin = runtime_in_use(store.with_read_only(False))
            if twin is not None:
                return twin.locks
    return store.runtime.locks


#: Set in a retry holding its shards: every index it needs is read again under the locks,
#: none taken from the cache or from a read begun before (another reader may cache an
#: index read before a writer's rewrite after the retry forgot the stale one).
_FRESH: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "aiozarr_fresh_indexes", default=False
)


@dataclass(frozen=True, slots=True)
class LocatedIndex:
    """A shard's index and the version of the shard it was read from (None: unknown)."""

    index: ShardIndex
    version: Version | None


def cached_index(array: StoredArray, shard: ShardSelection) -> LocatedIndex | None:
    """The cached index of `shard`, with its version; None where none is cached, or where
    it cannot show itself stale (`_shows_staleness`). None in a retry
    (`writers_kept_out`): one cached before it held the shard may be stale."""
    if _FRESH.get():
        return None
    found: LocatedIndex | None = array.index_cache.get(shard.key)
    return found if found is not None and _shows_staleness(found, shard) else None


def _shows_staleness(found: LocatedIndex | None, shard: ShardSelection) -> bool:
    """Whether a read of `shard` with the index `found` (None: the shard was missing)
    could find it stale: only where it fetches a stored inner chunk, whose version is
    compared. One that says none of the chunks is stored, read before a write stored
    them, would read fill: a read trusts such an index only if it read it itself."""
    return found is not None and any(found.index.range_of(i.inner_coords) for i in shard.inner)


def remember_index(
    array: StoredArray, key: str, index: ShardIndex, version: Version | None
) -> LocatedIndex:
    """The index of shard `key`, read from `version` of it, cached for later reads; one
    without a version that lasts (`lasting`: None, or one that cannot show the shard
    unchanged) is for this read only, and evicts any older one."""
    _note_same_index(array, key, index)
    located = LocatedIndex(index, version)
    if not lasting(version):  # no later answer could show it stale: not kept (see above)
        array.index_cache.invalidate(key)
    else:
        array.index_cache.put(key, located, index.nbytes)
    return located


def index_answered(
    array: StoredArray, key: str, layout: ShardLayout, answer: Versioned
) -> LocatedIndex:
    """The index of shard `key` from the answer to a read of its `index_range`: decoded,
    checked to point inside the shard where the answer's version tells its size
    (`stored_size`), and remembered (`remember_index`)."""
    data, version = answer
    index = layout.decode_index(data, key, stored_size(version))
    return remember_index(array, key, index, version)


def check_version(located: LocatedIndex, key: str, version: Version | None) -> None:
    """Raise `StaleIndexError` unless bytes of `version` may be read with `located`."""
    if version != located.version and None not in (version, located.version):
        raise StaleIndexError(key)


async def shard_indexes(
    array: StoredArray, shards: Sequence[ShardSelection]
) -> dict[str, LocatedIndex | None]:
    """The index of each of `shards` by key (None: the shard is missing): from the cache
    (`cached_index`), else from a read of it already on its way, else from one batch.

    One read of an index at a time per shard: a burst of cold reads of one shard (a
    service's first requests for a slice) reads its index once, not once each.
    """
    indexes: dict[str, LocatedIndex | None] = {}
    mine: list[ShardSelection] = []
    theirs: dict[str, asyncio.Future[LocatedIndex | None]] = {}
    loop = asyncio.get_running_loop()
    loading = array.index_loads
    wanted = {shard.key: shard for shard in shards}  # each shard once
    ours: dict[str, asyncio.Future[LocatedIndex | None]] = {}
    for key, shard in wanted.items():
        cached = cached_index(array, shard)
        if cached is not None:
            indexes[key] = cached
            continue
        # A retry joins no read begun before it held the shard (that one may be stale);
        # nor can a read await a future of another event loop.
        pending = None if _FRESH.get() else loading.get(key)
        if pending is not None and pending.get_loop() is loop:
            theirs[key] = pending
            continue
        mine.append(shard)
        if key not in loading:  # later reads of it join this one
            loading[key] = ours[key] = loop.create_future()
    if mine:
        await _load(array, mine, indexes, ours)
    for key, pending in theirs.items():
        await asyncio.wait([pending])  # its outcome, not its cancellation, is ours
        failed = pending.cancelled() or pending.exception() is not None
        if failed or not _shows_staleness(pending.result(), wanted[key]):
            # The read that loaded it failed or was cancelled, or began before a write
            # may have stored what it says is missing: read it ourselves.
            indexes.update(await _fresh_indexes(array, [wanted[key]]))
        else:
            indexes[key] = pending.result()
    return indexes


async def _fresh_indexes(
    array: StoredArray, shards: Sequence[ShardSelection]
) -> dict[str, LocatedIndex | None]:
    """The indexes of `shards` read by this read itself, joining no other's."""
    token = _FRESH.set(True)
    try:
        return await shard_indexes(array, shards)
    finally:
        _FRESH.reset(token)


async def _load(
    array: StoredArray,
    shards: list[ShardSelection],
    out: dict[str, LocatedIndex | None],
    ours: dict[str, asyncio.Future[LocatedIndex | None]],
) -> None:
    """Read the indexes of `shards` in one batch into `out`, and hand each to the reads
    waiting for it on `ours` (or their failure, for them to try again)."""
    loading = array.index_loads
    store = array.store
    try:
        if len(shards) == 1:  # the common case (a shard read in parts): no batch to run
            answers = [await store.get_versioned(shards[0].key, shards[0].layout.index_range)]
        else:
            answers = await store.get_versioned_values(
                [RangeRequest(s.key, s.layout.index_range) for s in shards]
            )
        for shard, answer in zip(shards, answers, strict=True):
            if answer is None:
                out[shard.key] = None
            else:
                out[shard.key] = index_answered(array, shard.key, shard.layout, answer)
    finally:
        for key, pending in ours.items():
            if loading.get(key) is pending:
                del loading[key]
            if key in out:
                pending.set_result(out[key])
            else:
                pending.cancel()
