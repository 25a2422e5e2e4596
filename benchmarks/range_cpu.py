"""`python -m benchmarks.range_cpu`: the CPU per range request, the event loop's and obstore's.

Reads `--ranges` small ranges, with coalescing off, of the `sharded`
array's first shard from the emulator (0 ms), in one batch, through aiozarr's store
(`get_partial_values`) and through obstore alone (`get_range_async` each, gathered),
alternating, and prints the CPU per range of the event loop's thread and of obstore's
runtime threads for each: what aiozarr's request path (batching, policy, budget,
statistics) costs above the client. A third round reads each range as a reader that
checks versions must, with obstore alone (`get_async` for the headers and ETag, then
`bytes_async`): two futures, each completed from a runtime thread that takes the GIL.

    python -m benchmarks.range_cpu --ranges 1000 --rounds 5
    python -m benchmarks.range_cpu --profile range.prof    # cProfile of aiozarr's rounds
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchmarks import spec, thread_cpu
from benchmarks.server import EmulatorProcess

DATA = Path(__file__).resolve().parent / "data"
_GAP = 4 << 10
_SIZE = 256
# Requests in flight at once, either way: under the emulator's cap on connections (over
# it, it answers 503s, and aiozarr's retries of them would be measured too).
_IN_FLIGHT = 64


def _runtime_cpu() -> float:
    """CPU seconds so far of obstore's runtime threads (0 where there is no /proc)."""
    return sum(ran for kind, ran in thread_cpu.snapshot("loop").values() if kind == "obstore") / 1e9


async def _timed(round_: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """The CPU of the event loop's thread and of the runtime's threads for one round."""
    loop, runtime = time.thread_time(), _runtime_cpu()
    await round_()
    return time.thread_time() - loop, _runtime_cpu() - runtime


def _obstore_round(client: object, key: str, offsets: list[int], versioned: bool) -> Callable:
    import obstore

    async def one(offset: int) -> None:
        if versioned:
            options = {"range": (offset, offset + _SIZE)}
            result = await obstore.get_async(client, key, options=options)  # type: ignore[arg-type]
            await result.bytes_async()
        else:
            await obstore.get_range_async(client, key, start=offset, end=offset + _SIZE)  # type: ignore[arg-type]

    async def round_() -> None:
        slots = asyncio.Semaphore(_IN_FLIGHT)

        async def limited(offset: int) -> None:
            async with slots:
                await one(offset)

        await asyncio.gather(*(limited(o) for o in offsets))

    return round_


async def _run(args: argparse.Namespace, options: dict[str, object]) -> None:
    from obstore.store import S3Store

    from aiozarr.storage.opening.url import from_url
    from aiozarr.storage.protocol import ByteRange, RangeRequest

    root = DATA / args.mode / "sharded.zarr"
    shard = max((p for p in root.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    key = str(shard.relative_to(root))
    size = shard.stat().st_size
    offsets = [(i * _GAP) % (size - _SIZE) for i in range(args.ranges)]
    offsets = sorted(set(offsets))
    store = from_url(f"s3://{spec.BUCKET}/sharded.zarr", storage_options=dict(options))
    client = S3Store(spec.BUCKET, **options)  # type: ignore[arg-type]
    full_key = f"sharded.zarr/{key}"
    requests = [RangeRequest(key, ByteRange.of(o, _SIZE)) for o in offsets]
    rounds = {
        "aiozarr": lambda: store.get_partial_values(requests),  # type: ignore[attr-defined]
        "obstore get_range": _obstore_round(client, full_key, offsets, versioned=False),
        "obstore get+body": _obstore_round(client, full_key, offsets, versioned=True),
    }
    for round_ in rounds.values():  # warm: connections, imports
        await round_()
    profiler = cProfile.Profile(time.thread_time) if args.profile else None
    measured: dict[str, list[tuple[float, float]]] = {name: [] for name in rounds}
    for _ in range(args.rounds):
        for name, round_ in rounds.items():
            if profiler is not None and name == "aiozarr":
                profiler.enable()
            measured[name].append(await _timed(round_))
            if profiler is not None and name == "aiozarr":
                profiler.disable()
    n = len(offsets)
    print(f"{n} ranges, CPU per range (median of {args.rounds} rounds):")
    for name, times in measured.items():
        loop = statistics.median(t[0] for t in times) / n * 1e6
        runtime = statistics.median(t[1] for t in times) / n * 1e6
        print(f"  {name:18s} event loop {loop:4.0f} us, obstore's runtime {runtime:4.0f} us")
    counts = store.stats()  # type: ignore[attr-defined]
    print(", ".join(f"{k} {counts[k]}" for k in ("requests", "retries", "hedges_issued")))
    if profiler is not None:
        profiler.dump_stats(args.profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="quick", choices=sorted(spec.MODES))
    parser.add_argument("--ranges", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", help="write a cProfile of aiozarr's rounds here")
    args = parser.parse_args()
    import aiozarr.config

    # One request per range: none coalesce.
    aiozarr.config.set(coalesce_gap_bytes=0, max_concurrency=_IN_FLIGHT)
    with EmulatorProcess(DATA / args.mode) as emulator:
        asyncio.run(_run(args, emulator.storage_options()))


if __name__ == "__main__":
    main()
