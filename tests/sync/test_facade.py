"""The sync facade: one `run` line per I/O method, parity with the async objects,
usable inside a running loop, cancellation on interrupt, and a clear error on its own loop."""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import signal
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr import sync
from aiozarr.engine import executor
from aiozarr.errors import SyncInLoopError, SyncTimeoutError
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.group import AsyncGroup
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.sync import facade, portal

SYNC_SOURCE = Path(facade.__file__).read_text()


def _public_coroutines(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction)
        if not name.startswith("_") and name not in ("open", "create")
    }


@pytest.mark.parametrize(
    ("async_cls", "sync_cls"), [(AsyncArray, sync.Array), (AsyncGroup, sync.Group)]
)
def test_every_async_method_has_a_sync_twin(async_cls: type, sync_cls: type) -> None:
    skip = {"getitem", "contains", "members"}  # served by __getitem__ / __contains__ / members()
    for name, signature in _public_coroutines(async_cls).items():
        twin = getattr(sync_cls, name, None)
        if name in skip and twin is None:
            continue
        assert twin is not None, f"{sync_cls.__name__} lacks {name}"
        if isinstance(twin, property):  # zarr-python's shape: Array.nchunks_initialized
            assert list(signature.parameters) == ["self"], f"{name} takes arguments"
            continue
        async_params = [p for p in signature.parameters if p != "self"]
        sync_params = [p for p in inspect.signature(twin).parameters if p != "self"]
        assert sync_params == async_params, f"{name}: {sync_params} != {async_params}"


def test_io_methods_are_single_run_lines() -> None:
    tree = ast.parse(SYNC_SOURCE)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            calls = [
                c
                for c in ast.walk(fn)
                if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "run"
            ]
            if not calls:
                continue
            body = [s for s in fn.body if not isinstance(s, ast.Expr)]  # docstrings aside
            assert len(body) == 1 and isinstance(body[0], ast.Return), (
                f"{cls.name}.{fn.name} must be a single `return ...run(...)` line"
            )


def test_numpy_like_access() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(10, 12), dtype="int32", chunks=(3, 5))
    data = np.arange(120, dtype="int32").reshape(10, 12)
    arr[...] = data
    assert np.array_equal(arr[:], data)
    assert np.array_equal(np.asarray(arr), data)
    assert arr[2, 3] == data[2, 3]
    assert np.array_equal(arr.oindex[[1, 4], [0, 11]], data[np.ix_([1, 4], [0, 11])])
    arr.oindex[[0, 9], :] = -1
    data[[0, 9], :] = -1
    assert np.array_equal(arr[...], data)
    assert (arr.shape, arr.dtype, arr.chunks, arr.ndim, arr.size, len(arr)) == (
        (10, 12),
        np.dtype("int32"),
        (3, 5),
        2,
        120,
        10,
    )
    assert arr.nbytes == 480
    arr.attrs["units"] = "m"
    assert dict(arr.attrs) == {"units": "m"}
    assert "shape=(10, 12)" in repr(arr)


async def test_sync_call_inside_a_running_loop() -> None:
    # As in a Jupyter cell or an `async def` test: the caller's thread runs a loop.
    arr = aiozarr.create_array(MemoryStore(), shape=(4,), dtype="f8", chunks=(2,))
    arr[:] = [1.0, 2.0, 3.0, 4.0]
    assert list(arr[:]) == [1.0, 2.0, 3.0, 4.0]


def test_calling_from_the_portal_loop_names_the_async_method() -> None:
    store = MemoryStore()
    arr = aiozarr.create_array(store, shape=(4,), dtype="f8", chunks=(2,))

    async def inside() -> None:
        arr[:]

    with pytest.raises(SyncInLoopError, match=r"await AsyncArray\.getitem"):
        sync.run(inside)


def test_a_sync_call_in_a_progress_callback_says_where_callbacks_run() -> None:
    """A sync callback cannot await: the advice to await alone was no way out."""
    arr = aiozarr.create_array(MemoryStore(), shape=(64,), dtype="f8", chunks=(8,))
    arr[:] = 1.0

    def progress(done: int, total: int) -> None:
        arr[0]

    with pytest.raises(SyncInLoopError, match=r"`progress=`, runs on that loop"):
        arr.getitem(slice(0, 64), progress=progress)


class _SlowStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.slow = False

    async def _stall(self, key: str) -> None:
        if key.endswith("c/0") and self.slow:
            self.started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise

    async def read(self, key, byte_range, max_bytes):  # type: ignore[no-untyped-def]
        await self._stall(key)
        return await super().read(key, byte_range, max_bytes)


_CTRL_C = {
    # a real Ctrl-C, to the process: handled by the caller's thread, in its wait
    "to the process": lambda: os.kill(os.getpid(), signal.SIGINT),
    # handled by this (another) thread, as a process's signal may be, or as one is that
    # lands while the caller is about to wait: either way no wait is cut short by it
    "handled elsewhere": lambda: signal.pthread_kill(threading.get_ident(), signal.SIGINT),
}


@pytest.mark.parametrize("ctrl_c", list(_CTRL_C))
def test_keyboard_interrupt_cancels_the_task(ctrl_c: str) -> None:
    store = _SlowStore()
    arr = aiozarr.create_array(store, shape=(4,), dtype="f8", chunks=(4,), fill_value=1.0)
    arr[:] = 2.0
    store.slow = True

    def interrupt() -> None:
        # Waits (bounded far beyond any load) for the read to be stalled, then interrupts
        # it: a thread that gave up early would leave the read to finish uninterrupted.
        if store.started.wait(60):
            _CTRL_C[ctrl_c]()

    threading.Thread(target=interrupt, daemon=True).start()
    # Python's own Ctrl-C handler, whatever an earlier test's library left installed
    # (in the whole suite the signal once raised nothing and the read ran to its end).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            arr[:]
    finally:
        signal.signal(signal.SIGINT, previous)
    assert store.cancelled.wait(60), "the read task kept running after Ctrl-C"


def test_a_call_ending_as_a_wait_slice_runs_out_gives_its_outcome(monkeypatch) -> None:
    # The main thread waits in slices, to raise a Ctrl-C: a call that ends as one runs
    # out gives its outcome, not the slice's TimeoutError (a first draft of the slices
    # raised it, under load, from a read). Slices of 0 s run out all the while.
    monkeypatch.setattr(portal, "_SIGNAL_CHECK_S", 0.0)

    async def value(i: int) -> int:
        await asyncio.sleep(0)
        return i

    async def timing_out() -> None:
        raise TimeoutError("the call's own")

    assert [sync.run(value, i) for i in range(50)] == list(range(50))
    with pytest.raises(TimeoutError, match="the call's own"):
        sync.run(timing_out)


def test_ctrl_c_while_the_task_is_handed_over_still_cancels_it(monkeypatch) -> None:
    store = _SlowStore()
    arr = aiozarr.create_array(store, shape=(4,), dtype="f8", chunks=(4,), fill_value=1.0)
    arr[:] = 2.0
    store.slow = True
    loop = portal._get_loop()
    hand_over = loop.submit

    def interrupted(*args, **kwargs):  # the task runs, but no future comes back
        hand_over(*args, **kwargs)
        assert store.started.wait(60)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "submit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        arr[:]
    assert store.cancelled.wait(60), "the read task kept running after Ctrl-C"


def test_timeout_cancels_the_task() -> None:
    store = _SlowStore()
    arr = aiozarr.create_array(store, shape=(4,), dtype="f8", chunks=(4,))
    arr[:] = 2.0
    store.slow = True
    with aiozarr.config.set(sync_timeout_s=0.2), pytest.raises(TimeoutError) as raised:
        arr[:]
    assert store.cancelled.wait(60)
    # aiozarr's error, and the built-in one code written for it catches
    assert isinstance(raised.value, SyncTimeoutError)
    assert "sync_timeout_s=0.2" in str(raised.value)


def test_arrays_pickle_into_a_fresh_process() -> None:
    import multiprocessing

    arr = aiozarr.create_array(MemoryStore(), shape=(3,), dtype="i4", chunks=(3,))
    arr[:] = [7, 8, 9]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_sum_in_child, (arr,)) == 24


def _sum_in_child(arr: sync.Array) -> int:
    return int(arr[:].sum())


def test_notebook_display() -> None:
    store = MemoryStore()
    root = aiozarr.create_group(store)
    arr = root.create_array(
        "temp", shape=(4, 6), dtype="f4", chunks=(2, 3), shards=(4, 6), dimension_names=["y", "x"]
    )
    page = arr._repr_html_()
    for fact in ("(4, 6)", "float32", "(2, 3)", "sharding_indexed", "zstd", "y, x", "96 B"):
        assert fact in page, fact
    assert "temp (4, 6) float32" in root._repr_html_()


def _start_every_codec_thread() -> None:
    """One job per codec thread, each waiting for all the others: every thread runs."""
    threads = executor.codec_threads()
    barrier = threading.Barrier(threads)

    async def all_at_once() -> None:
        jobs = (executor.run_codec(barrier.wait, 30, nbytes=1 << 30) for _ in range(threads))
        await asyncio.gather(*jobs)

    asyncio.run(all_at_once())


def test_sync_calls_share_the_codec_pool_threads(tmp_path: Path, monkeypatch: Any) -> None:
    # Each sync call is a task of its own; the pool's threads must outlive it, or every
    # call pays for starting (and stopping) its decoding threads.
    data = np.arange(512 * 512, dtype="f4").reshape(512, 512)
    arr = aiozarr.create_array(tmp_path / "a.zarr", shape=data.shape, chunks=(256, 256), dtype="f4")
    arr[...] = data
    _start_every_codec_thread()  # a pool starts its threads as jobs overlap: all now
    started: list[str] = []
    start = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    for _ in range(20):
        np.testing.assert_array_equal(arr[:300, :300], data[:300, :300])
    assert [name for name in started if name.startswith("aiozarr-codec")] == []


def test_iterating_an_array_gives_its_rows_and_a_0d_array_refuses() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(3, 2), chunks=(2, 2), dtype="i4")
    arr[...] = np.arange(6).reshape(3, 2)
    assert [row.tolist() for row in arr] == [[0, 1], [2, 3], [4, 5]]
    scalar = aiozarr.create_array(MemoryStore(), shape=(), dtype="i4", fill_value=5)
    with pytest.raises(TypeError, match="0-d"):
        list(scalar)
