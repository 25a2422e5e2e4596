"""Progress callbacks count finished chunks: monotonically, ending at the total."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends.memory import MemoryStore


def _recorder() -> tuple[list[tuple[int, int]], object]:
    steps: list[tuple[int, int]] = []
    return steps, lambda done, total: steps.append((done, total))


def _check(steps: list[tuple[int, int]], total: int) -> None:
    assert steps, "the callback never fired"
    done = [d for d, _ in steps]
    assert all(a < b for a, b in itertools.pairwise(done)), done  # strictly increasing
    assert done[0] >= 1 and done[-1] == total
    assert {t for _, t in steps} == {total}


@pytest.mark.parametrize("shards", [None, (8, 8)])
async def test_read_and_write_progress(shards) -> None:
    arr = await aiozarr.create_array_async(
        MemoryStore(), shape=(16, 16), dtype="u2", chunks=(4, 4), shards=shards
    )
    steps, callback = _recorder()
    await arr.setitem((slice(0, 8), slice(None)), 3, progress=callback)
    _check(steps, 8)  # 2 x 4 chunks written
    steps, callback = _recorder()
    values = await arr.getitem(..., progress=callback)  # half the chunks are missing
    _check(steps, 16)
    assert np.all(values[:8] == 3) and np.all(values[8:] == 0)
    steps, callback = _recorder()
    await arr.get_orthogonal_selection(([1, 14], slice(None)), progress=callback)
    _check(steps, 8)


def test_sync_progress_bar_and_callback(capsys: pytest.CaptureFixture[str]) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(10,), dtype="i4", chunks=(5,))
    arr.setitem(..., 1, progress=True)
    steps, callback = _recorder()
    assert list(arr.getitem(..., progress=callback)) == [1] * 10
    _check(steps, 2)
    assert "2/2" in capsys.readouterr().err  # the tqdm bar reached the total


async def test_progress_true_shows_a_bar_in_async_calls_too(capsys) -> None:
    pytest.importorskip("tqdm")
    arr = await aiozarr.create_array_async(MemoryStore(), shape=(16, 16), dtype="u2", chunks=(4, 4))
    await arr.setitem(..., 1, progress=True)
    values = await arr.getitem(..., progress=True)
    assert np.all(values == 1)
    frames = capsys.readouterr().err
    assert "16/16" in frames
    # the bar appears with its total: no frame without one (`0chunk [00:00, ?chunk/s]`)
    assert "0chunk [" not in frames and "0/16 [" in frames


def test_chunks_finished_twice_never_count_past_the_total() -> None:
    """A read that starts over or a write that merges again finishes chunks twice."""
    from aiozarr.engine.progress import ChunkProgress

    seen: list[tuple[int, int]] = []
    progress = ChunkProgress(4, lambda done, total: seen.append((done, total)))
    progress.advance(3)
    progress.advance(3)  # three finished again after a retry
    progress.advance(1)
    assert seen == [(3, 4), (4, 4)]
