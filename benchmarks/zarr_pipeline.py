"""zarr-python reads of a sharded array with and without `aiozarr.zarr.CodecPipeline`.

    python -m benchmarks.zarr_pipeline [--mode quick] [--profiles 20ms,cloud] [--repeats 3]

One run, one emulator (a child process) serving the mode's sharded dataset (spec.py:
inner chunks of 256 KiB, shards of 32 MiB in quick and full modes), each network profile
in turn, each in a fresh interpreter (`fresh.py`). Each row is one way of reading it,
each cell the median time of `repeats` reads of a freshly opened array (cold: no shard
index cached) and the emulator's GET count:

- `zarr`: zarr-python's default pipeline on its obstore `ObjectStore`;
- `zarr+pipeline`: the same store, `codec_pipeline.path = aiozarr.zarr.CodecPipeline`;
- `zarr+pipeline+Store`: the pipeline on `aiozarr.zarr.Store` (aiozarr's own S3 store);
- `aiozarr`: aiozarr's own API (`aiozarr.open_array`), the reference.

The ratios compare with `zarr` (speed-up) and with `aiozarr` (how close), in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import spec
from benchmarks.fresh import in_fresh_process
from benchmarks.server import EmulatorProcess

PATH = "pipeline/sharded.zarr"
WORKLOADS = ("full", "slab", "drill")
PIPELINE = "aiozarr.zarr.CodecPipeline"


def _write(root: Path, mode: spec.Mode) -> np.ndarray:
    """The mode's sharded dataset, written by zarr-python into the emulator's bucket."""
    import zarr

    shape, chunks, shards = mode.layout("sharded")
    data = spec.generate(mode)
    store = zarr.storage.LocalStore(root / PATH)
    arr = zarr.create_array(
        store=store, shape=shape, chunks=chunks, shards=shards, dtype=spec.DTYPE, fill_value=0.0
    )
    arr[...] = data
    return data


def _openers(endpoint: str) -> dict[str, Callable[[], Any]]:
    """Each way of reading, as a function that opens the array afresh."""
    import obstore
    import zarr

    import aiozarr
    from aiozarr.zarr import Store

    options = spec.storage_options(endpoint)
    url = f"s3://{spec.BUCKET}/{PATH}"

    # One obstore store, as a program holds one; zarr's store around it made per open.
    s3 = obstore.store.S3Store(spec.BUCKET, prefix=PATH, **options)

    def zarr_store() -> Any:
        return zarr.storage.ObjectStore(s3, read_only=True)

    def with_pipeline(make_store: Callable[[], Any]) -> Callable[[], Any]:
        def open_() -> Any:
            with zarr.config.set({"codec_pipeline.path": PIPELINE}):
                return zarr.open_array(make_store(), mode="r")

        return open_

    return {
        "zarr": lambda: zarr.open_array(zarr_store(), mode="r"),
        "zarr+pipeline": with_pipeline(zarr_store),
        "zarr+pipeline+Store": with_pipeline(
            lambda: Store(url, storage_options=options, read_only=True)
        ),
        "aiozarr": lambda: aiozarr.open_array(url, mode="r", storage_options=options),
    }


def _measure(
    emu: EmulatorProcess, open_: Callable[[], Any], sel: Any, want: np.ndarray, repeats: int
) -> tuple[float, int]:
    """Median seconds of `repeats` cold reads of `sel`, and the GETs of one of them.

    One more read goes first, unmeasured (imports, connections)."""
    times, gets = [], 0
    for i in range(repeats + 1):
        arr = open_()
        emu.reset()
        began = time.perf_counter()
        got = arr[sel]
        if i:
            times.append(time.perf_counter() - began)
        gets = emu.stats()["by_method"].get("GET", 0)
        if not np.array_equal(np.asarray(got), want):
            raise AssertionError("a read gave other values than were written")
    return statistics.median(times), gets


def _profile_rows(
    endpoint: str, controls: list[str], mode_name: str, profile: str, repeats: int
) -> list[dict[str, Any]]:
    """Every reader's rows on the emulator at `endpoint`, now serving `profile`."""
    mode = spec.MODES[mode_name]
    data = spec.generate(mode)  # what `_write` stored
    emu = EmulatorProcess.attach(endpoint, controls)
    rows = []
    for workload in WORKLOADS:
        sel = spec.selection(workload, mode)
        for name, open_ in _openers(endpoint).items():
            seconds, gets = _measure(emu, open_, sel, data[sel], repeats)
            row = {"profile": profile, "workload": workload, "reader": name}
            rows.append(row | {"seconds": seconds, "gets": gets})
    return rows


def run(mode: spec.Mode, profiles: list[str], repeats: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, mode)
        with EmulatorProcess(root) as emu:
            for profile in profiles:
                emu.set_profile(spec.PROFILES[profile])
                job = (emu.endpoint, emu.controls, mode.name, profile, repeats)
                rows += in_fresh_process(_profile_rows, *job)  # not the last profile's link
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: per profile and workload, each reader's time, GETs and ratios."""
    lines = [
        "| profile | workload | reader | median s | GETs | zarr / this | this / aiozarr |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        same = [
            r for r in rows if (r["profile"], r["workload"]) == (row["profile"], row["workload"])
        ]
        base = next(r["seconds"] for r in same if r["reader"] == "zarr")
        ref = next(r["seconds"] for r in same if r["reader"] == "aiozarr")
        lines.append(
            f"| {row['profile']} | {row['workload']} | {row['reader']} | {row['seconds']:.3f} "
            f"| {row['gets']} | {base / row['seconds']:.2f}x | {row['seconds'] / ref:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="quick", choices=sorted(spec.MODES))
    parser.add_argument("--profiles", default="20ms,cloud")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    mode = spec.MODES[args.mode]
    rows = run(mode, args.profiles.split(","), args.repeats)
    print(f"mode {mode.name}: shape {mode.shape}, sharded {mode.layout('sharded')[1:]}")
    print(table(rows))


if __name__ == "__main__":
    main()
