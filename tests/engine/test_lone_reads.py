"""A small read alone in the process decodes on its event loop's thread; a large one,
or reads side by side, on the codec pool (`engine/executor.py::decodes_here`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.engine import executor
from aiozarr.engine.executor import READS, SPLIT_BYTES
from aiozarr.errors import CodecError

CHUNK = (256, 256)  # float32: 256 KiB decoded, more than `INLINE_BYTES`


@pytest.fixture
def pool_jobs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the functions sent to the codec pool while the test runs."""
    sent: list[str] = []
    submit = executor.POOL.submit

    def counted(fn: Any, *args: Any) -> Any:
        sent.append(getattr(args[0], "__name__", repr(args[0])))  # fn: a context's run
        return submit(fn, *args)

    monkeypatch.setattr(executor.POOL, "submit", counted)
    yield sent


async def _array(tmp_path: Path) -> aiozarr.AsyncArray:
    arr = await aiozarr.create_array_async(
        str(tmp_path / "a.zarr"), shape=(1024, 1024), chunks=CHUNK, dtype="f4", fill_value=0
    )
    await arr.setitem(..., np.arange(1024 * 1024, dtype="f4").reshape(1024, 1024))
    return await aiozarr.open_array_async(str(tmp_path / "a.zarr"))


async def test_a_lone_small_read_decodes_without_the_pool(
    tmp_path: Path, pool_jobs: list[str]
) -> None:
    arr = await _array(tmp_path)
    pool_jobs.clear()
    assert await arr.getitem((300, 700)) == 300 * 1024 + 700
    window = await arr.getitem((slice(250, 260), slice(250, 260)))  # four chunks: 1 MiB
    np.testing.assert_array_equal(window[0], np.arange(250 * 1024 + 250, 250 * 1024 + 260))
    assert pool_jobs == []


async def test_a_large_read_decodes_on_the_pool(tmp_path: Path, pool_jobs: list[str]) -> None:
    arr = await _array(tmp_path)
    pool_jobs.clear()
    assert SPLIT_BYTES < 1024 * 1024 * 4
    await arr.getitem(...)
    assert "_decode_all" in pool_jobs


async def test_reads_side_by_side_decode_on_the_pool(tmp_path: Path, pool_jobs: list[str]) -> None:
    arr = await _array(tmp_path)
    pool_jobs.clear()
    points = [(i * 256, 5) for i in range(4)]
    values = await asyncio.gather(*(arr.getitem(p) for p in points))
    assert values == [i * 256 * 1024 + 5 for i in range(4)]
    assert pool_jobs.count("_decode_all") >= 3  # all but the first, which began alone


async def test_a_failed_or_cancelled_read_is_no_longer_counted(tmp_path: Path) -> None:
    arr = await _array(tmp_path)
    (tmp_path / "a.zarr" / "c" / "0" / "0").write_bytes(b"not zstd")
    with pytest.raises(CodecError):
        await arr.getitem((0, 0))
    task = asyncio.ensure_future(arr.getitem(...))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with READS.counted() as alone:
        assert alone
