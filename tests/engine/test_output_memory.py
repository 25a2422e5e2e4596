"""A selection too large for memory is refused with aiozarr's error, before any request."""

from __future__ import annotations

import asyncio
import os
import sys

import numpy as np
import pytest

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.engine import freed_memory
from aiozarr.errors import SelectionTooLargeError
from aiozarr.sizes import memory_bytes
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Versioned
from aiozarr.storage.protocol.wrapper import WrapperStore


def _array(shape: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[aiozarr.Array, CountingStore]:
    store = CountingStore(MemoryStore())
    arr = aiozarr.create_array(store, "big/temps", shape=shape, chunks=chunks, dtype="f8")
    if np.prod(chunks) < 10**7:
        arr[(0,) * len(shape)] = 1.0
    store.reset()
    return arr, store


@pytest.mark.parametrize(
    ("shape", "chunks", "selection", "nbytes"),
    [
        # numpy said "Unable to allocate 728. TiB"
        ((10**7, 10**7), (1000, 1000), (slice(None),), 8 * 10**14),
        # numpy said "array is too big" (the size overflows)
        ((2**40, 2**40), (2**30, 2**30), (...,), 8 * 2**80),
        # planning alone failed: 4.6e15 chunks along the axis
        ((2**62,), (1000,), (slice(None, None, 2),), 8 * 2**61),
        # one byte-element more than memory
        ((memory_bytes() // 8 + 1,), (2**20,), (slice(None),), 8 * (memory_bytes() // 8 + 1)),
    ],
)
def test_read_too_large_for_memory_names_array_and_bytes(
    shape: tuple[int, ...], chunks: tuple[int, ...], selection: tuple, nbytes: int
) -> None:
    arr, store = _array(shape, chunks)
    with pytest.raises(SelectionTooLargeError) as caught:
        arr[selection]
    message = str(caught.value)
    assert "array /big/temps" in message and f"({nbytes} bytes)" in message
    assert isinstance(caught.value, MemoryError)  # what numpy users catch
    assert store.counts["get"] == 0  # refused before any request
    corner = arr[tuple(slice(0, 2) for _ in shape)]  # smaller reads still work
    assert corner.shape == (2,) * len(shape)


async def test_async_and_orthogonal_reads_are_refused_alike() -> None:
    # Small index arrays: this process's peak memory is what later tests' children inherit.
    arr = await aiozarr.create_array_async(
        MemoryStore(), shape=(10**7, 10**7), chunks=(10**4, 10**4), dtype="i4"
    )
    with pytest.raises(SelectionTooLargeError, match=r"\(400000000000000 bytes\)"):
        await arr.getitem(...)
    with pytest.raises(SelectionTooLargeError, match=r"\(40000000000000 bytes\)"):
        await arr.get_orthogonal_selection((np.arange(0, 10**7, 10), slice(None)))


def test_fitting_reads_are_unaffected() -> None:
    arr, _ = _array((100, 100), (10, 10))
    assert arr[...].sum() == 1.0


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of this process's mapping that holds `address` (Linux)."""
    flags: list[str] = []
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                low, high = (int(x, 16) for x in head.split("-"))
                inside = low <= address < high
            elif inside and head == "VmFlags:":
                flags = line.split()[1:]
    return flags


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's page advice")
def test_a_large_output_is_paged_in_small_pages() -> None:
    # numpy advises huge pages for large arrays; compacting memory for them made a
    # process's first 512 MiB read ~1.5 s slower. The read's output is advised back.
    arr = aiozarr.create_array(MemoryStore(), shape=(1024, 1024), chunks=(512, 512), dtype="f8")
    arr[...] = 1.0
    out = arr[...]
    assert out.nbytes == 8 << 20 and (out == 1.0).all()
    assert "nh" in _vm_flags(out.ctypes.data)
    small = arr[:8, :8]  # below numpy's huge-page threshold: left as numpy made it
    assert (small == 1.0).all()


_ARENA_SCRIPT = """
import threading
from aiozarr.engine.freed_memory import give_back_freed_memory

def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024

def fill_and_free():
    first = bytearray(16 << 20)  # freeing it raises glibc's mmap threshold to 16 MiB
    del first
    blocks, keep = [], []
    for _ in range(40):  # now from this thread's arena, each with a small block kept
        blocks.append(bytearray(8 << 20))  # after it (malloc'd: over pymalloc's 512 bytes),
        keep.append(bytearray(1024))  # so the arena cannot shrink when they are freed
    del blocks
    kept.append(keep)

kept = []

base = rss()
worker = threading.Thread(target=fill_and_free)
worker.start(); worker.join()
held = rss() - base
assert give_back_freed_memory()
print(held, rss() - base)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_memory_of_a_large_read_goes_back_to_the_system() -> None:
    import subprocess

    # glibc's own tuning left as it is by default (dask's LocalCluster sets
    # MALLOC_TRIM_THRESHOLD_ in this process's environment, which trims on every free)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}
    done = subprocess.run(
        [sys.executable, "-c", _ARENA_SCRIPT], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    held, after = map(int, done.stdout.split())
    assert held > 200  # MiB freed by the thread, still resident
    assert after < held - 200


async def test_a_read_as_large_as_the_trim_threshold_gives_memory_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []
    monkeypatch.setattr(freed_memory, "give_back_freed_memory", lambda: calls.append(1))
    monkeypatch.setattr(freed_memory, "TRIM_AFTER_BYTES", 32 << 20)  # a small array suffices
    arr = await aiozarr.create_array_async(
        MemoryStore(), shape=(4 << 20,), chunks=(1 << 20,), dtype="f8"
    )
    await arr.getitem(slice(0, 1 << 20))  # 8 MiB: nothing to give back
    assert calls == []
    await arr.getitem(...)  # nothing stored, nothing fetched: given back once, at the end
    assert calls == [1]


class _HeldStore(WrapperStore):
    """Holds the answers for `held` until `release` is set."""

    def __init__(self, inner: MemoryStore, held: set[str]) -> None:
        super().__init__(inner)
        self.held = held
        self.release = asyncio.Event()

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        if key in self.held:
            await self.release.wait()
        return await super().read(key, byte_range, max_bytes)


async def test_a_large_read_gives_memory_back_as_it_decodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not only at its end: a shard's buffer freed after decoding stays resident beside
    the filling output until memory is given back. The last two chunks are held until
    memory has been given back once: a read that gives it back only at its end never
    gets them."""
    monkeypatch.setattr(freed_memory, "TRIM_AFTER_BYTES", 32 << 20)
    monkeypatch.setattr(freed_memory, "TRIM_EVERY_BYTES", 4 << 20)
    data = np.random.default_rng(0).random(4 << 20)  # 32 MiB that do not compress
    memory = MemoryStore()
    arr = await aiozarr.create_array_async(memory, shape=data.shape, chunks=(1 << 20,), dtype="f8")
    await arr.setitem(..., data)
    store = _HeldStore(memory, held={"c/2", "c/3"})
    reader = await aiozarr.open_array_async(store, mode="r")
    loop = asyncio.get_running_loop()
    done: list[int] = []  # chunks decoded so far, at each progress call
    given_back_at: list[int] = []  # chunks decoded so far, at each give-back

    def give_back() -> None:  # on a worker thread
        given_back_at.append(done[-1] if done else 0)
        loop.call_soon_threadsafe(store.release.set)

    monkeypatch.setattr(freed_memory, "give_back_freed_memory", give_back)
    async with asyncio.timeout(20):
        got = await reader.getitem(..., progress=lambda finished, total: done.append(finished))
    assert np.array_equal(got, data)
    assert given_back_at[0] == 2 and given_back_at[-1] == 4, given_back_at
