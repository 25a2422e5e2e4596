"""`python -m benchmarks.range_cpu`: the event loop's CPU per range request.

Reads `--ranges` small ranges, with coalescing off, of the `sharded`
array's first shard from the emulator (0 ms), in one batch, through aiozarr's store
(`get_partial_values`) and through obstore alone (`get_range_async` each, gathered),
alternating, and prints the CPU of the event loop's thread per range for each: what
aiozarr's request path (batching, policy, budget, statistics) costs above the client.

    python -m benchmarks.range_cpu --ranges 1000 --rounds 5
    python -m benchmarks.range_cpu --profile range.prof    # cProfile of aiozarr's rounds
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import time
from pathlib import Path

from benchmarks import spec
from benchmarks.server import EmulatorProcess

DATA = Path(__file__).resolve().parent / "data"
_GAP = 4 << 10
_SIZE = 256
# Requests in flight at once, either way: under the emulator's cap on connections (over
# it, it answers 503s, and aiozarr's retries of them would be measured too).
_IN_FLIGHT = 64


async def _aiozarr_round(store: object, requests: list[object]) -> float:
    cpu = time.thread_time()
    await store.get_partial_values(requests)  # type: ignore[attr-defined]
    return time.thread_time() - cpu


async def _obstore_round(client: object, key: str, offsets: list[int]) -> float:
    import obstore

    slots = asyncio.Semaphore(_IN_FLIGHT)

    async def one(offset: int) -> None:
        async with slots:
            await obstore.get_range_async(client, key, start=offset, end=offset + _SIZE)

    cpu = time.thread_time()
    await asyncio.gather(*(one(o) for o in offsets))
    return time.thread_time() - cpu


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
    await _aiozarr_round(store, requests)  # warm: connections, imports
    await _obstore_round(client, full_key, offsets)
    profiler = cProfile.Profile(time.thread_time) if args.profile else None
    ours, theirs = [], []
    for _ in range(args.rounds):
        if profiler is not None:
            profiler.enable()
        ours.append(await _aiozarr_round(store, requests))
        if profiler is not None:
            profiler.disable()
        theirs.append(await _obstore_round(client, full_key, offsets))
    n = len(offsets)
    a, o = statistics.median(ours) / n * 1e6, statistics.median(theirs) / n * 1e6
    print(f"{n} ranges: aiozarr {a:.0f} us, obstore {o:.0f} us of event-loop CPU per range")
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
