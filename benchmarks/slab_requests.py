"""How many GETs a slab costs, and what they buy: stock zarr-python against aiozarr under
request-shaping settings, on the layout of the zarr-python issue.

    python -m benchmarks.slab_requests [--profiles 20ms,cloud] [--repeats 3]

The array: 256 MiB float32 `(64, 1024, 1024)`, 16 shards of `(16, 512, 512)`, inner
chunks of 256 KiB `(1, 256, 256)`, zstd, written by the zarr-python that runs this. The
slab is the suite's (half of each axis from n/7: 12 of the 16 shards, none whole). Each
row is a median of `repeats` cold reads (open, then read) and the emulator's GETs and
MB of one of them. Run it with the newest zarr-python (the Python 3.12 venv) to compare
with it; aiozarr's rows take `aiozarr.config` settings, named in the row.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import spec
from benchmarks.server import EmulatorProcess

PATH = "slab/sharded.zarr"
SHAPE, CHUNKS, SHARDS = (64, 1024, 1024), (1, 256, 256), (16, 512, 512)
MiB = 1 << 20
#: aiozarr settings tried, by row name (the defaults first).
SETTINGS: dict[str, dict[str, Any]] = {
    "aiozarr": {},  # gap 64 KiB, parts of 2 MiB where a batch has < 16 runs
    "aiozarr part=16MiB": {"max_request_bytes": 16 * MiB},
    "aiozarr gap=512KiB": {"coalesce_gap_bytes": 512 << 10},
    "aiozarr gap=512KiB part=16MiB": {
        "coalesce_gap_bytes": 512 << 10,
        "max_request_bytes": 16 * MiB,
    },
    "aiozarr gap=1MiB part=16MiB": {"coalesce_gap_bytes": MiB, "max_request_bytes": 16 * MiB},
    "aiozarr gap=32KiB": {"coalesce_gap_bytes": 32 << 10},
}


def _write(root: Path) -> np.ndarray:
    import zarr

    mode = spec.Mode("slab", SHAPE, CHUNKS, SHARDS, CHUNKS, 0, 1)
    data = spec.generate(mode)
    arr = zarr.create_array(
        zarr.storage.LocalStore(root / PATH),
        shape=SHAPE,
        chunks=CHUNKS,
        shards=SHARDS,
        dtype=spec.DTYPE,
        fill_value=0.0,
    )
    arr[...] = data
    return data


def _readers(endpoint: str) -> dict[str, Callable[[Any], Any]]:
    """Each way of reading: a function of the selection that opens afresh and reads."""
    import obstore
    import zarr

    import aiozarr

    options = spec.storage_options(endpoint)
    s3 = obstore.store.S3Store(spec.BUCKET, prefix=PATH, **options)
    url = f"s3://{spec.BUCKET}/{PATH}"

    def stock(sel: Any) -> Any:
        return zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), mode="r")[sel]

    def pipeline(sel: Any) -> Any:
        with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
            arr = zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), mode="r")
        return arr[sel]

    def with_settings(settings: dict[str, Any]) -> Callable[[Any], Any]:
        async def go(sel: Any) -> Any:
            with aiozarr.config.set(**settings):
                arr = await aiozarr.open_array_async(url, mode="r", storage_options=options)
                return await arr.getitem(sel)

        return lambda sel: asyncio.run(go(sel))

    readers: dict[str, Callable[[Any], Any]] = {
        f"zarr {zarr.__version__}": stock,
        f"zarr {zarr.__version__} + aiozarr.zarr.CodecPipeline": pipeline,
    }
    readers.update({name: with_settings(s) for name, s in SETTINGS.items()})
    return readers


def _measure(emu: EmulatorProcess, read: Any, sel: Any, want: np.ndarray, repeats: int) -> dict:
    """Median seconds of `repeats` cold reads, and the GETs and MB of the last one."""
    times, stats = [], {}
    for _ in range(repeats):
        emu.reset()
        began = time.perf_counter()
        got = read(sel)
        times.append(time.perf_counter() - began)
        stats = emu.stats()
        if not np.array_equal(np.asarray(got), want):
            raise AssertionError("a read gave other values than were written")
    return {
        "seconds": statistics.median(times),
        "gets": stats["by_method"].get("GET", 0),
        "mb": stats["bytes_read"] / 1e6,
    }


def run(profiles: list[str], workloads: list[str], repeats: int) -> list[dict[str, Any]]:
    mode = spec.Mode("slab", SHAPE, CHUNKS, SHARDS, CHUNKS, 0, 1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = _write(root)
        with EmulatorProcess(root) as emu:
            readers = _readers(emu.endpoint)
            for profile, workload in itertools.product(profiles, workloads):
                emu.set_profile(spec.PROFILES[profile])
                sel = spec.selection(workload, mode)
                for name, read in readers.items():
                    row = {"profile": profile, "workload": workload, "reader": name}
                    rows.append(row | _measure(emu, read, sel, data[sel], repeats))
                    print(_line(rows[-1]), flush=True)
    return rows


def _line(row: dict[str, Any]) -> str:
    return (
        f"| {row['profile']} | {row['workload']} | {row['reader']} "
        f"| {row['seconds'] * 1e3:.0f} | {row['gets']} | {row['mb']:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="20ms,cloud")
    parser.add_argument("--workloads", default="slab,drill")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| profile | workload | reader | median ms | GETs | MB read |")
    print("|---|---|---|--:|--:|--:|")
    run(args.profiles.split(","), args.workloads.split(","), args.repeats)


if __name__ == "__main__":
    main()
