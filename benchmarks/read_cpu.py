"""`python -m benchmarks.read_cpu`: where one process's reads spend CPU, by thread.

Reads the `sharded` array (`--mode full`: 512 MiB, 16 shards) from the emulator several
times in one process, whole or as a workload selects (`--workload drill`; `--cold` opens
it again before each read, as the benchmark's cold reads do), and prints, per read: wall
time, the process's CPU, its RSS after the read and its peak so far, and the CPU of each
kind of thread (the event loop's, the codec pool's, obstore's runtime's), from
`/proc/self/task/*/schedstat` (Linux).

    python -m benchmarks.read_cpu --mode full --latency 20 --reads 4
    python -m benchmarks.read_cpu --workload drill --cold --reads 30
    py-spy record --native -f raw -o reads.raw -- python -m benchmarks.read_cpu --reads 6
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time
from pathlib import Path

from benchmarks import spec, thread_cpu
from benchmarks.server import EmulatorProcess

DATA = Path(__file__).resolve().parent / "data"


def _rss_mib() -> int:
    text = Path("/proc/self/status").read_text()
    return int(text.split("VmRSS:")[1].split()[0]) // 1024


async def _reads(
    url: str, options: dict[str, object], count: int, selection: object, cold: bool
) -> None:
    import aiozarr

    arr = await aiozarr.open_array_async(url, storage_options=options)
    for i in range(count):
        before, wall, cpu = thread_cpu.snapshot("loop"), time.perf_counter(), time.process_time()
        if cold:  # opened again: no shard index cached, as the benchmark's cold reads
            arr = await aiozarr.open_array_async(url, storage_options=options)
        out = await arr.getitem(selection)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        by_kind = thread_cpu.spent_ms(before, thread_cpu.snapshot("loop"))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        threads = ", ".join(f"{k} {v:.1f} ms" for k, v in sorted(by_kind.items()))
        print(
            f"read {i}: {wall:.3f} s, CPU {cpu:.2f} s ({threads}); "
            f"RSS {_rss_mib()} MiB, peak {peak} MiB",
            flush=True,
        )
        del out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="full", choices=sorted(spec.MODES))
    parser.add_argument("--latency", type=float, default=20.0, help="ms before each answer")
    parser.add_argument("--reads", type=int, default=4)
    parser.add_argument("--path", default="sharded.zarr", help="array in the dataset folder")
    parser.add_argument("--workload", default="full", help="the selection: full, slab, drill")
    parser.add_argument("--cold", action="store_true", help="open the array before each read")
    args = parser.parse_args()
    selection = spec.selection(args.workload, spec.MODES[args.mode])
    root = DATA / args.mode
    if not (root / args.path).exists():
        raise SystemExit(
            f"{root / args.path} is missing: `python -m benchmarks --mode {args.mode}` writes it"
        )
    with EmulatorProcess(root, latency_ms=args.latency) as emulator:
        url = f"s3://{spec.BUCKET}/{args.path}"
        asyncio.run(_reads(url, emulator.storage_options(), args.reads, selection, args.cold))


if __name__ == "__main__":
    main()
