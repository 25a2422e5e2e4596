"""`python -m benchmarks.cache_bench`: reads that come back, with the chunk cache on and off,
beside TensorStore with its `cache_pool`, through the emulator at 20 ms.

    python -m benchmarks.cache_bench           # quick mode, 3 repeats; writes the README section
    python -m benchmarks.cache_bench --repeats 1 --no-readme

Workloads (the datasets are written by aiozarr into `benchmarks/data/cache/`):

- `sliding-slabs`: slabs of 8 rows every 4 (each chunk row read by three slabs) over a
  `(128, 128, 128)` uint8 array of `(32, 32, 32)` zstd chunks (quick mode; `--full`:
  `(256, 256, 256)`), one array handle, every slab one read; the cache holds the array.
- `second-read`: a full read of a `(64, 512, 512)` float32 array in 16 shards of
  `(16, 256, 256)` (inner chunks of 256 KiB), then a second one on the same handle:
  under `recheck="open"` the second makes no request, under `True` one conditional
  request per shard, each answered 304.

Each row is the median wall time over the repeats, every repeat in the same process,
with the requests and bytes the emulator served in the last one. A sliding-slabs repeat
opens the array and starts with an empty cache; TensorStore's rows use a new context
whose `cache_pool` holds the same bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import spec
from benchmarks.server import EmulatorProcess

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data" / "cache"
LATENCY_MS = 20.0
START, END = "<!-- cache-bench: start -->", "<!-- cache-bench: end -->"
RESULTS_MARKER = "<!-- results:"
SLABS = "slabs.zarr"
SHARDS = "shards16.zarr"
CACHE_BYTES = 256 << 20


def _write_datasets(full: bool) -> int:
    """Write the two arrays (once per size); the slab array's edge."""
    import aiozarr

    edge = 256 if full else 128
    slabs = DATA_DIR / f"{edge}-{SLABS}"
    if not slabs.exists():
        rng = np.random.default_rng(0)
        values = (np.indices((edge,) * 3).sum(axis=0) // 3).astype("u1")
        values += rng.integers(0, 4, size=values.shape, dtype="u1")
        aiozarr.create_array(str(slabs), data=values, chunks=(32, 32, 32))
    shards = DATA_DIR / SHARDS
    if not shards.exists():
        rng = np.random.default_rng(1)
        values = np.round(rng.standard_normal((64, 512, 512)).astype("f4"), 2)
        aiozarr.create_array(str(shards), data=values, chunks=(4, 128, 128), shards=(16, 256, 256))
    return edge


def _slab_selections(edge: int) -> list[tuple[slice, ...]]:
    return [(slice(i, i + 8),) for i in range(0, edge - 7, 4)]


# -- engines ----------------------------------------------------------------------------------


async def _aiozarr(path: str, emu: EmulatorProcess, cache: dict[str, Any]) -> Any:
    import aiozarr

    url = f"s3://{spec.BUCKET}/{path}"
    return await aiozarr.open_array_async(url, storage_options=emu.storage_options(), **cache)


def _tensorstore(path: str, emu: EmulatorProcess, recheck: Any) -> Any:
    import tensorstore as ts

    context = ts.Context({"cache_pool": {"total_bytes_limit": CACHE_BYTES}})
    kvstore = {
        "driver": "s3",
        "bucket": spec.BUCKET,
        "path": path + "/",
        "endpoint": emu.endpoint,
        "aws_region": "us-east-1",
        "aws_credentials": {"type": "anonymous"},
    }
    return ts.open(
        {"driver": "zarr3", "kvstore": kvstore, "recheck_cached_data": recheck},
        read=True,
        context=context,
    ).result()


def _measure(emu: EmulatorProcess, repeats: int, run: Callable[[], None]) -> dict[str, Any]:
    times = []
    for _ in range(repeats):
        emu.reset()
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    served = emu.stats()
    return {
        "seconds": statistics.median(times),
        "requests": served.get("requests", 0),
        "bytes": served.get("bytes_read", 0),
    }


def _sliding(emu: EmulatorProcess, edge: int, repeats: int, ts: bool) -> list[dict[str, Any]]:
    path = f"{edge}-{SLABS}"
    sels = _slab_selections(edge)
    loop = asyncio.new_event_loop()
    rows = []
    for name, cache in (("cache off", {}), ("cache on", {"cache_bytes": CACHE_BYTES})):

        def run(cache: dict[str, Any] = cache) -> None:
            async def slabs() -> None:
                from aiozarr.engine.chunk_cache import ChunkCache

                ChunkCache.shared(CACHE_BYTES).clear()  # every repeat starts cold
                arr = await _aiozarr(path, emu, cache)
                for sel in sels:
                    await arr.getitem(sel)

            loop.run_until_complete(slabs())

        row = {"workload": "sliding-slabs", "engine": f"aiozarr, {name}"}
        rows.append(row | _measure(emu, repeats, run))

    def run_ts() -> None:
        arr = _tensorstore(path, emu, False)
        for sel in sels:
            arr[sel].read().result()

    if ts:
        ts_row = {"workload": "sliding-slabs", "engine": "tensorstore, cache_pool"}
        rows.append(ts_row | _measure(emu, repeats, run_ts))
    loop.close()
    return rows


def _second_read(emu: EmulatorProcess, repeats: int, ts: bool) -> list[dict[str, Any]]:
    loop = asyncio.new_event_loop()
    rows = []
    for recheck in ("open", True):
        arr = loop.run_until_complete(
            _aiozarr(SHARDS, emu, {"cache_bytes": CACHE_BYTES, "cache_recheck": recheck})
        )
        first = _measure(emu, 1, lambda arr=arr: loop.run_until_complete(arr.getitem(...)))
        if recheck == "open":
            rows.append({"workload": "second-read", "engine": "aiozarr, first read"} | first)
        again = _measure(emu, repeats, lambda arr=arr: loop.run_until_complete(arr.getitem(...)))
        rows.append({"workload": "second-read", "engine": f"aiozarr, recheck={recheck!r}"} | again)
    for recheck in ("open", True) if ts else ():
        arr = _tensorstore(SHARDS, emu, recheck)
        first = _measure(emu, 1, lambda arr=arr: arr[...].read().result())
        if recheck == "open":
            rows.append({"workload": "second-read", "engine": "tensorstore, first read"} | first)
        again = _measure(emu, repeats, lambda arr=arr: arr[...].read().result())
        name = f"tensorstore, recheck={recheck!r}"
        rows.append({"workload": "second-read", "engine": name} | again)
    loop.close()
    return rows


# -- report -----------------------------------------------------------------------------------


def render(rows: list[dict[str, Any]], edge: int, repeats: int) -> str:
    lines = [
        START,
        "## Reads that come back: the chunk cache",
        "",
        f"`python -m benchmarks.cache_bench` (20 ms profile, median of {repeats}; the slab "
        f"array `({edge},) * 3` uint8 in 32^3 chunks, the second read 64 MiB in 16 shards). "
        "Requests and bytes: what the emulator served in the last repeat.",
        "",
        "| workload | engine | time | vs first row | requests | bytes |",
        "|---|---|--:|--:|--:|--:|",
    ]
    base: dict[str, float] = {}
    for row in rows:
        first = base.setdefault(row["workload"], row["seconds"])
        lines.append(
            f"| {row['workload']} | {row['engine']} | {row['seconds'] * 1000:.0f} ms | "
            f"{first / row['seconds']:.1f}x | {row['requests']} | {row['bytes']:,} |"
        )
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write_readme(section: str, readme: Path, start: str = START, end: str = END) -> None:
    """Put `section` between its markers, or just above the main suite's results marker."""
    text = readme.read_text()
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + section + rest.split(end, 1)[1].lstrip("\n")
    elif RESULTS_MARKER in text:
        before, after = text.split(RESULTS_MARKER, 1)
        text = before + section + "\n" + RESULTS_MARKER + after
    else:
        text = text.rstrip("\n") + "\n\n" + section
    readme.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cache_bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="the (256,) * 3 slab array")
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument("--no-tensorstore", action="store_true")
    args = parser.parse_args(argv)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    edge = _write_datasets(args.full)
    with EmulatorProcess(DATA_DIR) as emu:
        emu.set_profile(spec.Profile("20ms", LATENCY_MS))
        ts = not args.no_tensorstore
        rows = _sliding(emu, edge, args.repeats, ts) + _second_read(emu, args.repeats, ts)
    section = render(rows, edge, args.repeats)
    print(section)
    if not args.no_readme:
        write_readme(section, HERE / "README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
