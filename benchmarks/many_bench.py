"""`python -m benchmarks.many_bench`: many small reads over several arrays, planned as one
(`aiozarr.read_many`) or each on its own, beside TensorStore's `ts.Batch`, at 20 ms and on
the cloud profile (the issue's target is the cloud's).

    python -m benchmarks.many_bench           # 3 repeats; writes the README section
    python -m benchmarks.many_bench --repeats 1 --profiles 20ms --no-readme

The workload, as an ML loader draws a batch: 256 windows of `(8, 64, 64)` at random
places (a fixed seed) over 4 float32 arrays of `(64, 512, 512)` (64 MiB each) in shards
of `(16, 256, 256)`, inner chunks of `(8, 64, 64)`; every array opened before the clock
starts, no shard index cached (a fresh open each repeat). Rows: the median wall time,
the requests and bytes the emulator served in the last repeat. Every repeat of every engine
starts the profile's slow tail from the same seed, so each meets the same draws.
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
from benchmarks.fresh import in_fresh_process
from benchmarks.server import EmulatorProcess

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data" / "many"
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


def _aiozarr_rows(
    emu: EmulatorProcess, profile: spec.Profile, repeats: int
) -> list[dict[str, Any]]:
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
            _restart(emu, profile)
            began = time.perf_counter()
            asyncio.run(run(arrays))
            times.append(time.perf_counter() - began)
        rows.append(_row(name, profile, times, emu))
    return rows


def _aiozarr_rows_at(
    endpoint: str, controls: list[str], profile: spec.Profile, repeats: int
) -> list[dict[str, Any]]:
    """`_aiozarr_rows` on the emulator at `endpoint`, from another process."""
    return _aiozarr_rows(EmulatorProcess.attach(endpoint, controls), profile, repeats)


def _restart(emu: EmulatorProcess, profile: spec.Profile) -> None:
    """The served counts back to zero and the profile's tail draws back to their start."""
    emu.set_profile(profile)
    emu.reset()


def _tensorstore_rows(
    emu: EmulatorProcess, profile: spec.Profile, repeats: int
) -> list[dict[str, Any]]:
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
        _restart(emu, profile)
        began = time.perf_counter()
        with ts.Batch() as batch:
            futures = [arrays[n][sel].read(batch=batch) for n, sel in windows]
        for future in futures:
            future.result()
        times.append(time.perf_counter() - began)
    return [_row("tensorstore, ts.Batch", profile, times, emu)]


def _row(
    engine: str, profile: spec.Profile, times: list[float], emu: EmulatorProcess
) -> dict[str, Any]:
    served = emu.stats()
    return {
        "profile": profile.name,
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
        f"`python -m benchmarks.many_bench` (median of {repeats}): {WINDOWS} "
        f"windows of `{WINDOW}` at random over 4 arrays of `{SHAPE}` float32, shards "
        f"`{SHARDS}`, inner chunks `{CHUNKS}`, no index cached. Requests and bytes: the last "
        "repeat's.",
        "",
        "| profile | engine | time | vs the profile's first row | requests | bytes |",
        "|---|---|--:|--:|--:|--:|",
    ]
    first: dict[str, float] = {}
    for row in rows:
        base = first.setdefault(row["profile"], row["seconds"])
        lines.append(
            f"| {row['profile']} | {row['engine']} | {row['seconds'] * 1000:.0f} ms "
            f"| {base / row['seconds']:.2f}x | {row['requests']} | {row['bytes']:,} |"
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
    parser.add_argument("--profiles", default="20ms,cloud", help="of " + ", ".join(spec.PROFILES))
    args = parser.parse_args(argv)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    _write_datasets()
    rows = []
    with EmulatorProcess(DATA_DIR) as emu:
        for name in args.profiles.split(","):
            profile = spec.PROFILES[name]
            job = (emu.endpoint, emu.controls, profile, args.repeats)
            rows += in_fresh_process(_aiozarr_rows_at, *job)  # not the last profile's link
            if not args.no_tensorstore:
                rows += _tensorstore_rows(emu, profile, args.repeats)
    section = render(rows, args.repeats)
    print(section)
    if not args.no_readme:
        _write_between(section, HERE / "README.md", START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
