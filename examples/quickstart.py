"""aiozarr in one minute, with no cloud account.

Starts the bundled object-store emulator on 127.0.0.1 with 20 ms of latency per
request (like a cloud region), writes a sharded array to it through an `s3://` URL,
reads a slab back with `await arr.getitem(...)` and with the sync facade, and
prints what it cost: requests, bytes and time.

Needs the base install only: `pip install -e .` in a checkout of aiozarr (it is not
on the package index yet; `pip wheel --no-deps .` builds a wheel to install elsewhere).

    python examples/quickstart.py [--latency-ms 20] [--dir DIR]

The data lives in a temporary directory removed at exit; `--dir DIR` keeps it there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time

import numpy as np

import aiozarr
from aiozarr.emulator import Emulator


def describe(label: str, stats: dict, seconds: float) -> None:
    print(
        f"{label:<28} {stats['requests']:>5} requests  "
        f"{stats['bytes_read'] / 1e6:>8.2f} MB down  {stats['bytes_written'] / 1e6:>8.2f} MB up  "
        f"{seconds * 1e3:>8.1f} ms"
    )


async def read_async(url: str, options: dict) -> np.ndarray:
    arr = await aiozarr.open_array_async(url, storage_options=options)
    return await arr.getitem((slice(10, 50), slice(100, 900), slice(None)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--dir", default=None, help="directory the emulator serves")
    args = parser.parse_args()

    with contextlib.ExitStack() as stack:
        root = args.dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="aiozarr-"))
        run(root, args.latency_ms)


def run(root: str, latency_ms: float) -> None:
    with Emulator(root, latency_ms=latency_ms).running_in_thread() as emulator:
        url = emulator.s3_url("quickstart.zarr")
        options = emulator.storage_options()
        print(f"emulator: {emulator.endpoint} (latency {latency_ms:g} ms), data in {root}")

        rng = np.random.default_rng(0)
        data = np.cumsum(rng.normal(size=(64, 1024, 256)), axis=2).astype("float32")

        emulator.reset_stats()
        start = time.perf_counter()
        arr = aiozarr.create_array(
            url,
            shape=data.shape,
            dtype=data.dtype,
            chunks=(8, 128, 256),
            shards=(32, 512, 256),
            storage_options=options,
            overwrite=True,
        )
        arr[...] = data
        describe(
            f"write {data.nbytes / 1e6:.0f} MB (sharded)",
            emulator.stats(),
            time.perf_counter() - start,
        )

        emulator.reset_stats()
        start = time.perf_counter()
        slab = asyncio.run(read_async(url, options))
        describe("read slab, await getitem", emulator.stats(), time.perf_counter() - start)
        assert np.array_equal(slab, data[10:50, 100:900, :])

        emulator.reset_stats()
        start = time.perf_counter()
        arr = aiozarr.open_array(url, storage_options=options)
        slab = arr[10:50, 100:900, :]
        describe("read slab, sync arr[...]", emulator.stats(), time.perf_counter() - start)
        assert np.array_equal(slab, data[10:50, 100:900, :])
        print(f"slab {slab.shape} {slab.dtype}: values match what was written")


if __name__ == "__main__":
    main()
