"""`python -m benchmarks.many_bench`: many small reads over several arrays, planned as one
(`aiozarr.read_many`) or each on its own, beside TensorStore's `ts.Batch`, at 20 ms.

    python -m benchmarks.many_bench           # 3 repeats; writes the README section
    python -m benchmarks.many_bench --repeats 1 --no-readme

The workload, as an ML loader draws a batch: 256 windows of `(8, 64, 64)` at random
places (a fixed seed) over 4 float32 arrays of `(64, 512, 512)` (64 MiB each) in shards
of `(16, 256, 256)`, inner chunks of `(8, 64, 64)`; every array opened before the clock
starts, no shard index cached (a fresh open each repeat). Rows: the median wall time,
the requests and bytes the emulator served in the last repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import spec
from benchmarks.cache_bench import write_readme as _write_between
from benchmarks.server import EmulatorProcess

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data" / "many"
LATENCY_MS = 20.0
START, END = "<!-- many-bench: start -->", "<!-- many-bench: end -->"
NAMES = ("a", "b", "c", "d")
SHAPE, SHARDS, CHUNKS, WINDOW = (64, 512, 512), (16, 256, 256), (8, 64, 64), (8, 64, 64)
WINDOWS = 256


def _write_datasets() -> None:
    import aiozarr

    for i, name in enumerate(NAMES):
        path = DATA_DIR / f"{name}.zarr"
        if not path.exists():
            rng = np.random.default_rng(i)
            values = np.round(rng.standard_normal(SHAPE).astype("f4"), 2)
            aiozarr.create_array(str(path), data=values, chunks=CHUNKS, shards=SHARDS)


def _windows() -> list[tuple[str, tuple[slice, ...]]]:
    rng = np.random.default_rng(42)
    out = []
    for _ in range(WINDOWS):
        name = NAMES[int(rng.integers(len(NAMES)))]
        starts = [int(rng.integers(0, s - w + 1)) for s, w in zip(SHAPE, WINDOW, strict=True)]
        out.append((name, tuple(slice(a, a + w) for a, w in zip(starts, WINDOW, strict=True))))
    return out


def _aiozarr_rows(emu: EmulatorProcess, repeats: int) -> list[dict[str, Any]]:
    import aiozarr

    windows = _windows()
    options = emu.storage_options()

    async def opened() -> dict[str, Any]:
        urls = {n: f"s3://{spec.BUCKET}/{n}.zarr" for n in NAMES}
        return {
            n: await aiozarr.open_array_async(u, storage_options=options) for n, u in urls.items()
        }

    async def together(arrays: dict[str, Any]) -> None:
        await aiozarr.read_many_async([(arrays[n], sel) for n, sel in windows])

    async def each(arrays: dict[str, Any]) -> None:
        await asyncio.gather(*(arrays[n].getitem(sel) for n, sel in windows))

    rows = []
    for name, run in (("aiozarr, read_many", together), ("aiozarr, each getitem", each)):
        times = []
        for _ in range(repeats):
            arrays = asyncio.run(opened())
            emu.reset()
            began = time.perf_counter()
            asyncio.run(run(arrays))
            times.append(time.perf_counter() - began)
        rows.append(_row(name, times, emu))
    return rows


def _tensorstore_rows(emu: EmulatorProcess, repeats: int) -> list[dict[str, Any]]:
    import tensorstore as ts

    windows = _windows()

    def opened() -> dict[str, Any]:
        kv = {
            "driver": "s3",
            "bucket": spec.BUCKET,
            "endpoint": emu.endpoint,
            "aws_region": "us-east-1",
            "aws_credentials": {"type": "anonymous"},
        }
        return {
            n: ts.open({"driver": "zarr3", "kvstore": {**kv, "path": f"{n}.zarr/"}}).result()
            for n in NAMES
        }

    times = []
    for _ in range(repeats):
        arrays = opened()
        emu.reset()
        began = time.perf_counter()
        with ts.Batch() as batch:
            futures = [arrays[n][sel].read(batch=batch) for n, sel in windows]
        for future in futures:
            future.result()
        times.append(time.perf_counter() - began)
    return [_row("tensorstore, ts.Batch", times, emu)]


def _row(engine: str, times: list[float], emu: EmulatorProcess) -> dict[str, Any]:
    served = emu.stats()
    return {
        "engine": engine,
        "seconds": statistics.median(times),
        "requests": served.get("requests", 0),
        "bytes": served.get("bytes_read", 0),
    }


def render(rows: list[dict[str, Any]], repeats: int) -> str:
    lines = [
        START,
        "## Many reads at once: `read_many`",
        "",
        f"`python -m benchmarks.many_bench` (20 ms profile, median of {repeats}): {WINDOWS} "
        f"windows of `{WINDOW}` at random over 4 arrays of `{SHAPE}` float32, shards "
        f"`{SHARDS}`, inner chunks `{CHUNKS}`, no index cached. Requests and bytes: the last "
        "repeat's.",
        "",
        "| engine | time | vs first row | requests | bytes |",
        "|---|--:|--:|--:|--:|",
    ]
    first = rows[0]["seconds"]
    for row in rows:
        lines.append(
            f"| {row['engine']} | {row['seconds'] * 1000:.0f} ms | {first / row['seconds']:.2f}x "
            f"| {row['requests']} | {row['bytes']:,} |"
        )
    lines += ["", END]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.many_bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument("--no-tensorstore", action="store_true")
    args = parser.parse_args(argv)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    _write_datasets()
    with EmulatorProcess(DATA_DIR) as emu:
        emu.set_profile(spec.Profile("20ms", LATENCY_MS))
        rows = _aiozarr_rows(emu, args.repeats)
        if not args.no_tensorstore:
            rows += _tensorstore_rows(emu, args.repeats)
    section = render(rows, args.repeats)
    print(section)
    if not args.no_readme:
        _write_between(section, HERE / "README.md", START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
