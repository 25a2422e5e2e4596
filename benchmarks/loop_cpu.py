"""`python -m benchmarks.loop_cpu`: the sync API's CPU on uvloop's loop and on asyncio's.

The sync facade runs every call on aiozarr's background event loop, which is uvloop's
where uvloop is installed (the `sync_uvloop` setting). This reads the `sharded` array
from the emulator through the sync API in child processes that alternate between the
two loops (`AIOZARR_SYNC_UVLOOP=1` / `0`), and prints per workload the median wall time
and CPU of each kind of thread (the loop's, the codec pool's, obstore's runtime's, the
caller's), from `/proc/self/task/*/schedstat` (Linux): a cold drill (opened again, no
shard index cached), 20 random single elements, and with `--full` the whole array.

    python -m benchmarks.loop_cpu --mode full --rounds 2 --full
    python -m benchmarks.loop_cpu --latency 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import spec, thread_cpu
from benchmarks.server import EmulatorProcess

DATA = Path(__file__).resolve().parent / "data"
_KINDS = ("loop", "codec", "obstore", "caller")


def _measure(read: Callable[[], object], repeats: int) -> dict[str, float]:
    """Median wall time and CPU by thread kind of `repeats` calls of `read`, in ms."""
    walls: list[float] = []
    cpus: dict[str, list[float]] = {kind: [] for kind in (*_KINDS, "total")}
    for _ in range(repeats):
        before, wall = thread_cpu.snapshot("caller"), time.perf_counter()
        read()
        wall = time.perf_counter() - wall
        spent = thread_cpu.spent_ms(before, thread_cpu.snapshot("caller"))
        walls.append(wall * 1e3)
        for kind in _KINDS:
            cpus[kind].append(spent.get(kind, 0.0))
        cpus["total"].append(sum(spent.values()))
    result = {"wall": statistics.median(walls)}
    result.update({kind: statistics.median(values) for kind, values in cpus.items()})
    return result


def _child(url: str, options: dict[str, object], mode: spec.Mode, full: bool) -> None:
    """Runs in the child: every workload on this process's loop, one JSON line each."""
    import aiozarr

    drill = spec.selection("drill", mode)
    points = spec.random_points(mode)[:20]
    arr = aiozarr.open_array(url, storage_options=options)
    arr[points[0]]  # the loop started, the shard indexes of the random reads cached

    def cold_drill() -> None:
        aiozarr.open_array(url, storage_options=options)[drill]

    def random_elements() -> None:
        for point in points:
            arr[point]

    workloads = {"drill": (cold_drill, 15), "random": (random_elements, 15)}
    if full:
        workloads["full"] = (lambda: arr[...], 4)
    for name, (read, repeats) in workloads.items():
        print(json.dumps({"workload": name, **_measure(read, repeats)}), flush=True)


def _run_child(uvloop: bool, args: argparse.Namespace, emulator: EmulatorProcess) -> list[dict]:
    env = {**os.environ, "AIOZARR_SYNC_UVLOOP": "1" if uvloop else "0"}
    options = json.dumps(emulator.storage_options())
    command = [sys.executable, "-m", "benchmarks.loop_cpu", "--child", options]
    command += ["--mode", args.mode] + (["--full"] if args.full else [])
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="full", choices=sorted(spec.MODES))
    parser.add_argument("--latency", type=float, default=0.0, help="ms before each answer")
    parser.add_argument("--rounds", type=int, default=2, help="child processes per loop")
    parser.add_argument("--full", action="store_true", help="also read the whole array")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    mode = spec.MODES[args.mode]
    url = f"s3://{spec.BUCKET}/sharded.zarr"
    if args.child is not None:
        _child(url, json.loads(args.child), mode, args.full)
        return
    root = DATA / args.mode
    if not (root / "sharded.zarr").exists():
        raise SystemExit(f"{root} is missing: `python -m benchmarks --mode {args.mode}` writes it")
    columns = ("wall", *_KINDS, "total")
    print("| round | loop | workload | " + " | ".join(f"{k} ms" for k in columns) + " |")
    print("|---|---|---|" + "--:|" * len(columns))
    with EmulatorProcess(root, latency_ms=args.latency) as emulator:
        for round_ in range(args.rounds):
            for uvloop in (False, True):
                for row in _run_child(uvloop, args, emulator):
                    cells = " | ".join(f"{row[k]:.1f}" for k in columns)
                    loop = "uvloop" if uvloop else "asyncio"
                    print(f"| {round_} | {loop} | {row['workload']} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
