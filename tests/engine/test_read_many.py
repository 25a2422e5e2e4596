"""`aiozarr.read_many`: many selections on many arrays read as one plan (request counts)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import numpy as np
import pytest
from tests.batch_shapes import LateIndex, assert_indexes_then_data

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store
from aiozarr.testing.round_trips import RoundTripStore

S3 = Callable[[], Store]

NAMES = ("a", "b", "c", "d")


def _values(name: str) -> np.ndarray:
    return np.random.default_rng(ord(name)).integers(0, 1000, size=(64, 64), dtype="i4")


def _arrays(make: Callable[[], Store]) -> tuple[CountingStore, dict[str, aiozarr.Array]]:
    """Four sharded arrays (2 x 2 shards of 32 x 32, inner chunks of 8 x 8) in a new
    store (the emulator's: ranges of one object coalesce), opened through one counting
    store whose counters start at zero."""
    inner = make()
    for name in NAMES:
        aiozarr.create_array(inner, name, data=_values(name), chunks=(8, 8), shards=(32, 32))
    store = CountingStore(inner)
    arrays = {name: aiozarr.open_array(store, name, mode="r") for name in NAMES}
    store.reset()
    return store, arrays


def _is_index(byte_range: object) -> bool:
    return getattr(byte_range, "suffix", None) is not None


def test_indexes_of_every_array_in_one_batch_then_the_data(
    emulator_s3_store: S3, tmp_path: Path
) -> None:
    store, arrays = _arrays(emulator_s3_store)
    selections = [(arrays[n], (slice(i, i + 5), slice(3, 50))) for n in NAMES for i in (0, 40)]
    values = aiozarr.read_many(selections)
    for (arr, sel), got in zip(selections, values, strict=True):
        assert np.array_equal(got, _values(arr.path)[sel])
    assert_indexes_then_data(store.batches, 16)  # 4 x 4 shards
    gets = [key for op, key, _ in store.requests if op == "get"]
    assert len(gets) == 16 + 16  # one coalesced run per shard


def test_ranges_of_one_shard_coalesce_across_selections(
    emulator_s3_store: S3, tmp_path: Path
) -> None:
    store, arrays = _arrays(emulator_s3_store)
    arr = arrays["a"]
    arr[0:1, 0:1]  # the index cached: only data ranges are counted below
    store.reset()
    left, right = (slice(0, 8), slice(0, 8)), (slice(0, 8), slice(8, 16))
    first, second = aiozarr.read_many([(arr, left), (arr, right)])
    assert np.array_equal(first, _values("a")[left])
    assert np.array_equal(second, _values("a")[right])
    assert store.counts["get"] == 1  # two adjacent inner chunks: one range
    store.reset()
    arr[left], arr[right]
    assert store.counts["get"] == 2  # the control: each selection on its own


def test_overlapping_selections_share_their_chunks(emulator_s3_store: S3) -> None:
    """Chunks two selections both need are fetched once and land in both outputs."""
    store, arrays = _arrays(emulator_s3_store)
    arr = arrays["c"]
    arr[0:1, 0:1]  # the index cached
    store.reset()
    sels = [(slice(0, 6), slice(0, 10)), (slice(2, 8), slice(5, 12)), (slice(0, 8), slice(0, 16))]
    got = aiozarr.read_many([(arr, sel) for sel in sels])
    for sel, values in zip(sels, got, strict=True):
        assert np.array_equal(values, _values("c")[sel])
    assert store.counts["get"] == 1


def test_one_answer_for_many_selections_is_decoded_in_one_codec_call_per_thread(
    emulator_s3_store: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst of answers serving many selections costs a codec call (a thread hop) per
    codec thread, not one per selection it serves."""
    from aiozarr.engine import decoding, executor, many

    calls: list[int] = []

    async def counted(fn: Callable[..., object], jobs: list[object], *args: object, nbytes: int):
        calls.append(len(jobs))
        return await executor.run_codec(fn, jobs, *args, nbytes=nbytes)

    store, arrays = _arrays(emulator_s3_store)
    arr = arrays["d"]
    arr[0:1, 0:1]  # the index cached
    store.reset()
    for module in (many, decoding):  # a selection's own decode, and the shared one
        monkeypatch.setattr(module, "run_codec", counted)
    # 16 selections, one inner chunk each, of one shard: one coalesced range, one answer
    sels = [(slice(y, y + 8), slice(x, x + 8)) for y in range(0, 32, 8) for x in range(0, 32, 8)]
    with aiozarr.config.set(codec_threads=2):
        got = aiozarr.read_many([(arr, sel) for sel in sels])
    for sel, values in zip(sels, got, strict=True):
        assert np.array_equal(values, _values("d")[sel])
    assert store.counts["get"] == 1
    assert calls == [16]  # 4 KiB of chunks: one codec call, not one per selection


def test_random_windows_over_four_arrays_read_every_index_then_each_shards_chunks(
    emulator_s3_store: S3,
) -> None:
    inner = emulator_s3_store()
    for name in NAMES:
        aiozarr.create_array(inner, name, data=_values(name), chunks=(8, 8), shards=(32, 32))
    store = RoundTripStore(inner)
    arrays = {name: aiozarr.open_array(store, name, mode="r") for name in NAMES}
    rng = np.random.default_rng(5)
    windows = []
    for _ in range(64):
        name = NAMES[int(rng.integers(4))]
        y, x = (int(v) for v in rng.integers(0, 64 - 12, size=2))
        windows.append((arrays[name], (slice(y, y + 12), slice(x, x + 12))))
    store.reset()
    got = aiozarr.read_many(windows)
    for (arr, sel), values in zip(windows, got, strict=True):
        assert np.array_equal(values, _values(arr.path)[sel])
    gets = [(key, r) for op, key, r in store.requests if op == "get"]
    indexes = {key for key, r in gets if _is_index(r)}
    assert len(indexes) == sum(1 for key, r in gets if _is_index(r))  # each index once
    assert len(gets) == len(set(gets))  # no range asked twice
    # Every index in the first round trip, and each shard's chunks once its index came
    # (`test_a_late_index_holds_back_only_its_own_shards_chunks`): two on each shard's
    # path. (`depth` counts one more wherever a shard's chunks came back before another
    # shard's index did.)
    assert sorted(store.log.by_round_trip()[0]) == sorted(indexes)


def test_arrays_in_several_stores(tmp_path: Path) -> None:
    local = CountingStore(LocalStore(tmp_path))
    memory = MemoryStore()
    values = np.arange(100, dtype="f8").reshape(10, 10)
    on_disk = aiozarr.create_array(local, data=values, chunks=(5, 5), shards=(10, 10))
    in_memory = aiozarr.create_array(memory, data=values * 2, chunks=(3, 3))
    local.reset()
    got = aiozarr.read_many([(on_disk, (slice(2, 7), 4)), (in_memory, ...), (on_disk, 0)])
    assert np.array_equal(got[0], values[2:7, 4])
    assert np.array_equal(got[1], values * 2)
    assert np.array_equal(got[2], values[0])
    assert_indexes_then_data(local.batches, 1)


def test_async_points_orthogonal_and_missing(emulator_s3_store: S3, tmp_path: Path) -> None:
    _, arrays = _arrays(emulator_s3_store)
    empty = aiozarr.create_array(
        LocalStore(tmp_path), "e", shape=(20, 20), dtype="i2", chunks=(5, 5)
    )
    picks = (np.array([1, 50, 63]), np.array([2, 2, 60]))

    async def main() -> list[object]:
        return await aiozarr.read_many_async(
            [
                (arrays["a"].async_array, picks),
                (arrays["b"], (np.array([0, 9, 33]), slice(None, 4))),
                (empty.async_array, (slice(0, 10), 3)),
            ]
        )

    points, outer, nothing = anyio.run(main)
    assert np.array_equal(points, _values("a")[picks])
    assert np.array_equal(outer, _values("b")[[0, 9, 33], :4])
    assert np.array_equal(nothing, np.zeros(10, dtype="i2"))


def test_a_bad_selection_raises_and_reads_nothing_more(
    emulator_s3_store: S3, tmp_path: Path
) -> None:
    store, arrays = _arrays(emulator_s3_store)
    with pytest.raises(IndexError):
        aiozarr.read_many([(arrays["a"], (slice(0, 5), 0)), (arrays["b"], (99, 0))])
    assert store.counts["get"] == 0


def test_with_the_chunk_cache(tmp_path: Path) -> None:
    for name in NAMES:
        aiozarr.create_array(LocalStore(tmp_path), name, data=_values(name), chunks=(8, 8))
    store = CountingStore(LocalStore(tmp_path))
    arrays = [aiozarr.open_array(store, n, cache_bytes=2 << 20, cache_recheck=False) for n in NAMES]
    selections = [(arr, (slice(0, 16), slice(0, 16))) for arr in arrays]
    aiozarr.read_many(selections)
    store.reset()
    got = aiozarr.read_many(selections)
    assert store.counts["get"] == 0
    for arr, values in zip(arrays, got, strict=True):
        assert np.array_equal(values, _values(arr.path)[:16, :16])


def test_nothing_to_read() -> None:
    assert aiozarr.read_many([]) == []


def test_a_pair_without_an_array_is_refused_by_name() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype="i4")
    with pytest.raises(aiozarr.errors.AiozarrError, match="got _Selector where the array goes"):
        aiozarr.read_many([(arr.vindex, [1]), (arr, 0)])


@pytest.mark.parametrize(
    "read",
    [
        lambda arr: (arr,),
        lambda arr: (arr, 0, 1),
        lambda arr: arr,  # an array alone, not a pair
        lambda arr: None,
    ],
)
def test_a_read_that_is_not_a_pair_is_refused_by_name(read: Callable[..., object]) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype="i4")
    with pytest.raises(aiozarr.errors.AiozarrError, match=r"takes \(array, selection\) pairs"):
        aiozarr.read_many([(arr, 0), read(arr)])


async def test_an_async_array_alone_is_refused_by_name() -> None:
    arr = await aiozarr.create_array_async(MemoryStore(), shape=(2,), chunks=(2,), dtype="i4")
    with pytest.raises(aiozarr.errors.AiozarrError, match=r"takes \(array, selection\) pairs"):
        await aiozarr.read_many_async([(arr, 0), arr])


def test_a_selection_s_error_says_which_read_it_is(tmp_path: Path) -> None:
    """A selection's error (out of bounds, a bad index) names no array: among many reads
    over several arrays its note says which read and array it is."""
    for name in NAMES:
        aiozarr.create_array(LocalStore(tmp_path), name, data=_values(name), chunks=(8, 8))
    a, b = (aiozarr.open_array(LocalStore(tmp_path), n) for n in NAMES[:2])
    with pytest.raises(aiozarr.errors.BoundsCheckError) as raised:
        aiozarr.read_many([(a, (0, 0)), (b, (0, 0)), (b, (999, 0))])
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "reads[2] of 3" in notes and f"/{NAMES[1]} shape" in notes and "(999, 0)" in notes


async def test_a_late_index_holds_back_only_its_own_shards_chunks() -> None:
    inner = MemoryStore()
    for name in NAMES:
        await aiozarr.create_array_async(
            inner, name, data=_values(name), chunks=(8, 8), shards=(32, 32)
        )
    store = LateIndex(inner, "a/c/0/0")
    arrays = {n: await aiozarr.open_array_async(store, n, mode="r") for n in NAMES}
    selections = [(arrays[n], (slice(i, i + 5), slice(3, 50))) for n in NAMES for i in (0, 40)]
    got = await aiozarr.read_many_async(selections)
    for (arr, sel), values in zip(selections, got, strict=True):
        assert np.array_equal(values, _values(arr.path)[sel])
    assert store.held_until_data  # the other shards' chunks went out before its index came
    assert_indexes_then_data(store.batches, 16)
