"""A cached shard index never serves bytes of another version of its shard.

Handle A reads (its index is cached); handle B (another array object, or another
process) rewrites the shard so that every inner chunk moves; A's next read must return
the new values, never another chunk's bytes nor a "corrupt data" error.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from tests.reliability.locations import StoreFactory

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.engine import many
from aiozarr.engine.located_index import StaleIndexError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store
from aiozarr.storage.protocol.wrapper import WrapperStore

SHAPE = (64, 64)  # one shard of 8 x 8 inner chunks of 8 x 8


class AfterEachIndex(WrapperStore):
    """Awaits `then(key)` after reading each shard index (a suffix range), before the
    reader gets it."""

    def __init__(self, inner: Store, then: Callable[[str], Awaitable[None]]) -> None:
        super().__init__(inner)
        self.then = then

    async def read(self, key, byte_range, max_bytes):  # type: ignore[no-untyped-def]
        answer = await super().read(key, byte_range, max_bytes)
        await self._after(key, [byte_range])
        return answer

    async def read_ranges(self, key, byte_ranges, max_bytes):  # type: ignore[no-untyped-def]
        answer = await super().read_ranges(key, byte_ranges, max_bytes)
        await self._after(key, byte_ranges)
        return answer

    async def _after(self, key: str, byte_ranges: list[ByteRange | None]) -> None:
        if any(r is not None and r.suffix for r in byte_ranges):
            await self.then(key)


def _values(seed: int) -> np.ndarray:
    """Random values: zstd-compressed chunks of different sizes, so a rewrite moves them."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << (8 + seed), size=SHAPE, dtype="i8")


@pytest.mark.parametrize("make_store", ["memory", "local", "s3"], indirect=True)
def test_a_rewritten_shard_is_read_with_its_new_index(make_store: StoreFactory) -> None:
    """The writer and the reader are two store objects over one location."""
    writer = aiozarr.create_array(
        make_store(), shape=SHAPE, dtype="i8", chunks=(8, 8), shards=SHAPE
    )
    writer[...] = _values(1)
    reader = aiozarr.open_array(make_store(), mode="r")
    assert np.array_equal(reader[3:5, 40:50], _values(1)[3:5, 40:50])  # index cached

    writer[...] = _values(2)  # every inner chunk changes size: the layout moves
    assert np.array_equal(reader[3:5, 40:50], _values(2)[3:5, 40:50])
    assert np.array_equal(reader[...], _values(2))

    writer[8:16, 8:16] = 7  # a partial write (read-modify-write) moves the rest too
    expected = _values(2)
    expected[8:16, 8:16] = 7
    assert np.array_equal(reader[50:, :20], expected[50:, :20])


def test_a_stale_index_costs_one_more_index_and_range_request(tmp_path: Path) -> None:
    writer = aiozarr.create_array(
        LocalStore(tmp_path), shape=SHAPE, dtype="i8", chunks=(8, 8), shards=SHAPE
    )
    writer[...] = _values(1)
    counting = CountingStore(LocalStore(tmp_path))
    reader = aiozarr.open_array(counting, mode="r")
    reader[0, 0]
    counting.reset()
    assert reader[60, 60] == _values(1)[60, 60]
    assert counting.counts["get"] == 1  # warm index: the range alone

    writer[...] = _values(2)
    counting.reset()
    assert reader[60, 60] == _values(2)[60, 60]
    # The stale range (never decoded), then the index and the range again.
    assert counting.counts["get"] == 3


def test_a_shard_rewritten_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    writer = aiozarr.create_array(
        LocalStore(path), shape=SHAPE, dtype="i8", chunks=(8, 8), shards=SHAPE
    )
    writer[...] = _values(1)
    reader = aiozarr.open_array(LocalStore(path), mode="r")
    assert reader[33, 17] == _values(1)[33, 17]
    script = textwrap.dedent(f"""
        import numpy as np, aiozarr
        arr = aiozarr.open_array({str(path)!r}, mode="r+")
        arr[...] = np.random.default_rng(2).integers(0, 1 << 10, size={SHAPE}, dtype="i8")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert reader[33, 17] == _values(2)[33, 17]
    assert np.array_equal(reader[...], _values(2))


@pytest.mark.parametrize(
    ("codecs", "says"),
    [
        ({}, "it was rewritten while it was read"),
        # uncompressed: each rewrite keeps the layout, so the same index each time; the
        # error named only a server's flapping ETags and advised reading without versions
        ({"compressors": None}, "another writer may keep rewriting it .* only in that second"),
    ],
    ids=["other-index", "same-index"],
)
def test_a_shard_that_keeps_changing_fails_with_a_named_error(
    tmp_path: Path, codecs: dict[str, Any], says: str
) -> None:
    """A shard replaced between every index and range read, each time with other values:
    a StoreError, not bad data. (Replaced by the same bytes under a new version, the
    store's versions change without its content: read as unversioned,
    tests/storage/test_http_versions.py.)"""

    class Rewriting(MemoryStore):
        """Replaces shard `c/0/0` after every read of its index (a suffix read)."""

        def __init__(self) -> None:
            super().__init__()
            self.rewrites = 0

        async def read(self, key, byte_range, max_bytes):  # type: ignore[no-untyped-def]
            answer = await super().read(key, byte_range, max_bytes)
            self._after(key, byte_range)
            return answer

        def _after(self, key, byte_range) -> None:  # type: ignore[no-untyped-def]
            if key == "c/0/0" and byte_range is not None and byte_range.suffix is not None:
                self.rewrites += 1
                self._store(key, shards[self.rewrites % 2])  # other values, a new version

    shards = []
    for seed in (1, 2):
        values = MemoryStore()
        made = aiozarr.create_array(
            values, shape=SHAPE, dtype="i8", chunks=(8, 8), shards=SHAPE, **codecs
        )
        made[...] = _values(seed)
        shards.append(bytes(values._data["c/0/0"]))
    store = Rewriting()
    arr = aiozarr.create_array(
        store, shape=SHAPE, dtype="i8", chunks=(8, 8), shards=SHAPE, **codecs
    )
    arr[...] = _values(1)
    arr = aiozarr.open_array(store, mode="r")
    with pytest.raises(aiozarr.errors.StoreError, match=rf"'c/0/0'.*{says}"):
        arr[5:9, 5:9]
    assert store.rewrites == 5


@pytest.mark.parametrize("together", [False, True], ids=["getitem", "read_many"])
async def test_a_shard_this_process_keeps_rewriting_is_read_while_its_writer_waits(
    tmp_path: Path, together: bool
) -> None:
    """A writer of this process rewrites the shard right after every index read it can
    get in before: the retry holds the shard's write lock, so the writer queues behind
    the read instead of making it stale five times (a StoreError before)."""
    writer = await aiozarr.create_array_async(
        LocalStore(tmp_path), shape=SHAPE, dtype="i8", chunks=(8, 8), shards=SHAPE
    )
    await writer.setitem(..., _values(1))
    locks = LocalStore(tmp_path).runtime.locks  # equal stores share one runtime
    queued: list[asyncio.Future[None]] = []
    generation = iter(range(2, 9))

    async def rewrite(key: str) -> None:
        rewrite = writer.setitem(..., _values(next(generation)))
        if len(locks) == 0:  # the shard is free: the writer gets in first
            await rewrite
        else:  # the read holds it: the writer waits for it
            queued.append(asyncio.ensure_future(rewrite))

    reader = await aiozarr.open_array_async(AfterEachIndex(LocalStore(tmp_path), rewrite), mode="r")
    window = (slice(5, 40), slice(5, 40))
    if together:
        got, other = await aiozarr.read_many_async([(reader, window), (reader, (60, 1))])
        assert other == _values(2)[60, 1]
    else:
        got = await reader.getitem(window)
    assert len(queued) == 1 and not queued[0].done()  # one rewrite under the first try
    assert np.array_equal(got, _values(2)[window])
    await queued[0]  # the writer then goes on, and its write is kept
    assert np.array_equal(await writer.getitem(...), _values(3))


@pytest.mark.parametrize("handle", ["same", "another"])
async def test_a_read_begun_after_a_write_returned_sees_it_though_an_index_was_loading(
    tmp_path: Path, handle: str
) -> None:
    """A read whose shard index is still on its way when a write stores a chunk it says
    is missing: a read begun after the write returned does not take that index (it read
    the fill value for the chunk just written)."""
    armed, held, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def hold_once(key: str) -> None:
        if armed.is_set():
            armed.clear()
            held.set()
            await release.wait()

    array = await aiozarr.create_array_async(
        LocalStore(tmp_path), shape=(8,), dtype="i4", chunks=(2,), shards=(8,), fill_value=0
    )
    await array.setitem(slice(0, 2), 1)
    reader = await aiozarr.open_array_async(AfterEachIndex(LocalStore(tmp_path), hold_once))
    writer = reader if handle == "same" else array
    armed.set()
    early = asyncio.ensure_future(reader.getitem(slice(0, 2)))
    await held.wait()  # its index read is held: the index still loading
    await writer.setitem(slice(4, 6), 5)
    later = asyncio.ensure_future(reader.getitem(slice(4, 6)))
    await asyncio.sleep(0)
    release.set()
    assert (await early).tolist() == [1, 1]
    assert (await later).tolist() == [5, 5]


def test_a_read_after_every_shard_was_rewritten_reads_every_index_again_at_once(
    tmp_path: Path,
) -> None:
    """16 cached indexes all stale (another program rewrote the array): one stale try,
    then every shard read afresh; not one try per stale index (a StoreError after 5,
    and the next reads failing too)."""
    kwargs = {"shape": SHAPE, "dtype": "i8", "chunks": (8, 8), "shards": (16, 16)}
    writer = aiozarr.create_array(LocalStore(tmp_path), **kwargs)
    writer[...] = _values(1)
    counting = CountingStore(LocalStore(tmp_path))
    reader = aiozarr.open_array(counting, mode="r")
    assert np.array_equal(reader[...], _values(1))  # 16 indexes cached
    writer[...] = _values(2)
    counting.reset()
    assert np.array_equal(reader[...], _values(2))
    # 16 ranges by the stale indexes (never decoded), then the 16 shards whole: the
    # read needs all of each, and no index is cached any more
    assert counting.counts["get"] == 32


@pytest.mark.parametrize("cached", ["index", "chunk"])
def test_a_file_rewritten_in_place_keeping_size_and_mtime_is_a_new_version(
    tmp_path: Path, cached: str
) -> None:
    """`cp -p` (or `tar x`) over a file keeps its inode, and puts its size and mtime
    back: the cached shard index, or the chunk cache under recheck=True, must still
    see new bytes (the index's old offsets gave the other inner chunk's values)."""
    sharded = cached == "index"
    kwargs: dict[str, Any] = {"shape": (8,), "dtype": "i4", "compressors": None}
    kwargs.update(chunks=(4,), shards=(8,)) if sharded else kwargs.update(chunks=(8,))
    kwargs["config"] = {"write_empty_chunks": False}
    old = aiozarr.create_array(LocalStore(tmp_path / "old"), **kwargs)
    new = aiozarr.create_array(LocalStore(tmp_path / "new"), **kwargs)
    if sharded:  # one inner chunk each, at the same offset: equal sizes
        old[0:4], new[4:8] = 1, 2
    else:
        old[...], new[...] = 1, 2
    expected = new[...]
    live = LocalStore(tmp_path / "old")
    reader = aiozarr.open_array(live, cache_bytes=1 << 20, cache_recheck=True)
    assert np.array_equal(reader[...], old[...])
    target, source = tmp_path / "old" / "c" / "0", tmp_path / "new" / "c" / "0"
    stat = target.stat()
    assert source.stat().st_size == stat.st_size
    target.write_bytes(source.read_bytes())  # in place: the same inode
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # what `cp -p` does
    assert np.array_equal(reader[...], expected)


def test_a_rewrite_keeping_the_layout_keeps_the_index_cached(tmp_path: Path) -> None:
    """The same values written again: the shard's new version has the index it had.
    One such stale try is a rewrite, not a server whose versions change without the
    content: the index read again is cached, and the next read needs no index."""
    writer = aiozarr.create_array(
        LocalStore(tmp_path), shape=SHAPE, dtype="i8", chunks=(8, 8), shards=SHAPE
    )
    writer[...] = _values(1)
    counting = CountingStore(LocalStore(tmp_path))
    reader = aiozarr.open_array(counting, mode="r")
    assert reader[60, 60] == _values(1)[60, 60]  # index cached
    for _ in range(3):  # rewritten three times, one read each: one stale try each
        writer[...] = _values(1)
        assert reader[60, 60] == _values(1)[60, 60]
    counting.reset()
    assert reader[61, 61] == _values(1)[61, 61]
    assert counting.counts["get"] == 1  # the range alone: the index is still kept


def test_read_many_forgets_only_the_indexes_of_the_array_that_went_stale(
    tmp_path: Path,
) -> None:
    kwargs = {"shape": SHAPE, "dtype": "i8", "chunks": (8, 8), "shards": SHAPE}
    first = aiozarr.create_array(LocalStore(tmp_path), "a", **kwargs)
    second = aiozarr.create_array(LocalStore(tmp_path), "b", **kwargs)
    first[...], second[...] = _values(1), _values(2)
    counting = CountingStore(LocalStore(tmp_path))
    readers = [aiozarr.open_array(counting, name, mode="r") for name in ("a", "b")]
    aiozarr.read_many([(r, (0, 0)) for r in readers])  # both indexes cached
    first[...] = _values(3)  # a's shard moves
    counting.reset()
    got = aiozarr.read_many([(r, (5, 5)) for r in readers])
    assert [int(v) for v in got] == [_values(3)[5, 5], _values(2)[5, 5]]
    # both ranges, then, in the retry, both indexes (read again under the shards' locks:
    # one cached before them may be stale) and both ranges
    assert counting.counts["get"] == 6
    counting.reset()
    assert readers[1][7, 7] == _values(2)[7, 7]
    assert counting.counts["get"] == 1  # b's index was kept: its range alone


@pytest.mark.parametrize("together", [False, True], ids=["getitem", "read_many"])
async def test_a_read_retried_holds_every_shard_it_needs_so_no_writer_here_can_stale_it(
    tmp_path: Path, together: bool
) -> None:
    """Writers of this process rewrite each shard right after its index is read, while
    they can: the first retry holds the write locks of all six shards the read needs
    (not only the one that went stale), so it succeeds and the writers queue behind it;
    holding only the stale ones, each try found another shard stale (a StoreError)."""
    shape, shards = (16, 96), (16, 16)
    writer = await aiozarr.create_array_async(
        LocalStore(tmp_path), shape=shape, dtype="i8", chunks=(8, 8), shards=shards
    )
    rng = np.random.default_rng(0)
    model = rng.integers(0, 1 << 40, size=shape)
    await writer.setitem(..., model)
    locks = LocalStore(tmp_path).runtime.locks  # equal stores share one runtime
    queued: list[asyncio.Future[None]] = []

    async def rewrite(column: int) -> None:
        region = (slice(None), slice(16 * column, 16 * column + 16))
        values = rng.integers(0, 1 << int(rng.integers(8, 40)), size=(16, 16))
        await writer.setitem(region, values)
        model[region] = values

    async def rewrite_after_its_index(key: str) -> None:
        written = asyncio.ensure_future(rewrite(int(key.rsplit("/", 1)[1])))
        while not written.done() and not locks.waiting(key):
            await asyncio.sleep(0)
        if not written.done():  # the read holds the shard: the writer waits for it
            queued.append(written)

    reader = await aiozarr.open_array_async(
        AfterEachIndex(LocalStore(tmp_path), rewrite_after_its_index), mode="r"
    )
    window = (slice(1, 7), slice(1, 95))  # 2 of each shard's 4 inner chunks: by its index
    if together:
        (got,) = await aiozarr.read_many_async([(reader, window)])
    else:
        got = await reader.getitem(window)
    assert np.array_equal(got, model[window])
    assert len(queued) == 6 and not any(q.done() for q in queued)
    await asyncio.gather(*queued)  # the writers then go on, and their writes are kept
    assert np.array_equal(await writer.getitem(...), model)


async def test_retries_of_reads_of_two_stores_in_opposite_orders_do_not_deadlock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two batched reads of arrays of two stores, listed in opposite orders, both
    retrying while a writer holds the first store's shard: the retries take the stores'
    lock tables in one order, so neither ends up holding one and waiting for the other."""
    x, y = [
        await aiozarr.create_array_async(
            LocalStore(tmp_path / name), shape=(16,), dtype="i4", chunks=(2,), shards=(16,)
        )
        for name in ("x", "y")
    ]
    stale_first_tries = [2]
    read_once = many._read_once

    async def stale_once(reads, projections):  # type: ignore[no-untyped-def]
        if stale_first_tries[0]:  # as a rewrite between an index and its chunks makes it
            stale_first_tries[0] -= 1
            raise StaleIndexError("c/0")
        return await read_once(reads, projections)

    monkeypatch.setattr(many, "_read_once", stale_once)
    tables = [x.store.runtime.locks, y.store.runtime.locks]
    release = asyncio.Event()

    async def writer() -> None:  # a writer of x's shard, mid-write
        async with tables[0].hold(["c/0"]):
            await release.wait()

    async def together(first: Any, second: Any) -> list[Any]:
        async with aiozarr.batch():
            return await asyncio.gather(first.getitem(...), second.getitem(...))

    writing = asyncio.ensure_future(writer())
    while not len(tables[0]):
        await asyncio.sleep(0)
    reads = [asyncio.ensure_future(together(x, y)), asyncio.ensure_future(together(y, x))]
    while sum(t.waiting("c/0") for t in tables) < 2:  # both retries queued for a lock
        await asyncio.sleep(0)
    release.set()
    await writing
    with anyio.fail_after(20):
        for got in await asyncio.gather(*reads):
            assert [a.tolist() for a in got] == [[0] * 16, [0] * 16]
