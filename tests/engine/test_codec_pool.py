"""The codec pool: it serves every event loop whatever each one's `codec_threads`, and
still runs codec work while the interpreter exits (non-daemon threads, `atexit`)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.engine import executor
from aiozarr.engine.executor import run_codec

pytestmark = pytest.mark.timeout(120)


def test_changing_codec_threads_keeps_the_pool_and_its_threads() -> None:
    """Alternating settings (two loops with different `codec_threads`) never replace the
    pool: a replaced pool was shut down under another loop about to submit to it. Every
    job runs, on the one pool, which never holds more threads than the larger setting
    (a thread may end and another start as the setting shrinks and grows again)."""
    alive: list[int] = []

    def job() -> None:
        alive.append(executor.POOL.threads)

    async def alternate() -> None:
        with config.set(codec_threads=1):  # threads earlier tests left end (one a job)
            for _ in range(10_000):
                await run_codec(int)
                if executor.POOL.threads <= 1:
                    break
        for n in range(20):
            with config.set(codec_threads=1 + n % 2):
                await run_codec(job)

    pool = executor.POOL
    asyncio.run(alternate())
    assert len(alive) == 20
    assert max(alive) <= 2
    assert executor.POOL is pool


def test_codec_threads_of_two_loops_at_once(tmp_path: Path) -> None:
    arr = aiozarr.create_array(tmp_path / "a.zarr", shape=(512, 512), chunks=(128, 128), dtype="f8")
    values = np.arange(512 * 512, dtype="f8").reshape(512, 512)
    arr[...] = values
    errors: list[BaseException] = []

    def reader(threads: int) -> None:
        with config.set(codec_threads=threads):
            for _ in range(5):
                try:
                    assert (asyncio.run(arr.async_array.getitem(...)) == values).all()
                except BaseException as error:
                    errors.append(error)

    workers = [threading.Thread(target=reader, args=(n,)) for n in (1, 2, 3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert errors == []


_AT_EXIT = """
import atexit, sys, threading
import numpy as np, aiozarr

path = sys.argv[1]
arr = aiozarr.create_array(path, shape=(512, 512), chunks=(256, 256), dtype="f8")

def write(value):  # 512 KiB chunks: encoded on the codec pool
    arr[...] = np.full(arr.shape, value, "f8")

@atexit.register
def save_on_exit():  # atexit runs after concurrent.futures' own exit hook
    write(7.0)

def late_writer():  # a non-daemon thread still writing once the main thread is done
    threading.main_thread().join()
    write(5.0)

threading.Thread(target=late_writer).start()
"""


def test_writes_at_interpreter_exit_complete(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_AT_EXIT), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Error" not in done.stderr, done.stderr
    assert (aiozarr.open_array(path)[...] == 7.0).all()
