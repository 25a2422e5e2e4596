"""`aiozarr bench URL`: how fast your own array reads from your own store and network.

    aiozarr bench s3://bucket/data.zarr --path temperature --selection "0:10,:,:"
    aiozarr bench ./data.zarr --repeat 5 --json

Reads the selection (all of it by default) `--repeat` times, cold (no shard-index cache
carried between runs), and reports throughput, requests, bytes, latency percentiles and
round trips (requests / peak in flight: how many waves of requests the read needed),
then the settings it suggests for this store: the coalescing gap (bytes you can fetch
in the time of one extra request) and the concurrency.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

from aiozarr.cli.errors import run_command
from aiozarr.cli.options import Parser, add_common, positive
from aiozarr.cli.progress import human_bytes
from aiozarr.cli.storage_options import options_for, parse_storage_options

__all__ = ["build_parser", "main", "parse_selection", "run_bench", "suggest"]

_MIN_GAP = 64 << 10
_MAX_GAP = 16 << 20


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `bench` arguments, added to `parser` or a new parser."""
    parser = parser or Parser(
        prog="aiozarr bench",
        description="Measure read throughput of an array and suggest store settings.",
    )
    parser.add_argument("url", help="path or URL of the array (or of its store, with --path)")
    parser.add_argument("--path", default="", help="array inside the store")
    parser.add_argument(
        "--selection",
        default=None,
        metavar="SLICES",
        help='numpy-style selection, e.g. "0:10,:,5" (default: everything)',
    )
    parser.add_argument("--repeat", type=positive, default=3, help="reads to time (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_common(parser)
    return parser


def parse_selection(text: str | None) -> Any:
    """`"0:10,:,5"` -> `(slice(0, 10), slice(None), 5)`; None -> `...`."""
    if text is None or not text.strip():
        return ...
    parts: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        if part == "...":
            parts.append(...)
        elif ":" in part:
            try:
                bounds = [int(b) if b.strip() else None for b in part.split(":")]
            except ValueError:
                bounds = []
            if not 2 <= len(bounds) <= 3:
                raise ValueError(f"selection {text!r}: bad slice {part!r}")
            parts.append(slice(*bounds))
        else:
            try:
                parts.append(int(part))
            except ValueError:
                raise ValueError(f"selection {text!r}: bad index {part!r}") from None
    return tuple(parts)


def suggest(result: dict[str, Any], limit: int) -> dict[str, Any]:
    """Settings for this store from a bench result: coalescing gap and concurrency.

    The gap is the bandwidth-delay product of one request: bytes one request moves in
    the time a new request waits for its first byte (p50 latency). Concurrency doubles
    when reads filled every slot, else stays.
    """
    requests = max(result["requests"], 1)
    latency_s = (result.get("latency_p50_ms") or 0) / 1000
    per_request_rate = (
        result["bytes_read"] / requests / max((result.get("latency_p95_ms") or 1) / 1000, 1e-6)
    )
    gap = int(min(max(latency_s * per_request_rate, _MIN_GAP), _MAX_GAP))
    gap = 1 << max(int(math.log2(gap)), 0)
    saturated = result["peak_inflight"] >= limit
    return {
        "coalesce_gap_bytes": gap,
        "max_concurrency": limit * 2 if saturated else limit,
        "why": (
            "every request slot was busy: more concurrency may help"
            if saturated
            else "requests never filled the concurrency limit: it is not the bottleneck"
        ),
    }


async def run_bench(array: Any, selection: Any, repeat: int) -> dict[str, Any]:
    """Read `selection` of `array` `repeat` times; the median run's numbers, JSON-ready."""
    from aiozarr.nodes.array import AsyncArray

    store = array.store
    runs = []
    for _ in range(max(repeat, 1)):
        # A new AsyncArray has an empty shard-index cache: each run reads cold.
        cold = AsyncArray(store, array.path, array.metadata)
        store.reset_stats()
        start = time.perf_counter()
        out = await cold.getitem(selection)
        seconds = time.perf_counter() - start
        stats = store.stats()
        runs.append((seconds, stats, getattr(out, "nbytes", 0)))
    runs.sort(key=lambda run: run[0])
    seconds, stats, decoded = runs[len(runs) // 2]
    requests = int(stats.get("reads", 0))
    peak = max(int(stats.get("peak_inflight", 1)), 1)
    result: dict[str, Any] = {
        "shape": list(array.shape),
        "dtype": str(array.dtype),
        "selection": repr(selection),
        "runs": len(runs),
        "seconds": round(seconds, 4),
        "seconds_all": [round(run[0], 4) for run in runs],
        "decoded_bytes": int(decoded),
        "bytes_read": int(stats["bytes_read"]),
        "requests": requests,
        "round_trips": math.ceil(requests / peak) if requests else 0,
        "peak_inflight": peak,
        "decoded_mb_per_s": round(decoded / seconds / 1e6, 2) if seconds else None,
        "read_mb_per_s": round(stats["bytes_read"] / seconds / 1e6, 2) if seconds else None,
        "retries": int(stats.get("retries", 0)),
        "throttled": int(stats.get("throttled", 0)),
    }
    for key in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms"):
        if key in stats:
            result[key] = stats[key]
    result["suggested"] = suggest(result, int(stats.get("limit", 64)))
    return result


def _text(result: dict[str, Any]) -> str:
    s = result["suggested"]
    latency = ", ".join(
        f"{k.split('_')[1]} {result[k]:.1f} ms"
        for k in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms")
        if result.get(k) is not None  # None: no request was timed
    )
    return "\n".join(
        [
            f"array      {tuple(result['shape'])} {result['dtype']}, "
            f"selection {result['selection']}",
            f"time       {result['seconds']:.3f} s (median of {result['runs']}: "
            f"{', '.join(f'{t:.3f}' for t in result['seconds_all'])})",
            f"throughput {result['decoded_mb_per_s']} MB/s decoded, "
            f"{result['read_mb_per_s']} MB/s from the store",
            f"requests   {result['requests']} ({human_bytes(result['bytes_read'])} read, "
            f"{human_bytes(result['decoded_bytes'])} decoded), {result['round_trips']} round "
            f"trips, peak {result['peak_inflight']} in flight",
            f"latency    {latency or '-'}; retries {result['retries']}, "
            f"throttled {result['throttled']}",
            f"suggested  coalesce_gap_bytes={s['coalesce_gap_bytes']} "
            f"max_concurrency={s['max_concurrency']} ({s['why']})",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of `aiozarr bench`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    async def body() -> int:
        from aiozarr.api import open_array_async

        options = parse_storage_options(args.storage_option)
        selection = parse_selection(args.selection)
        array = await open_array_async(
            args.url, args.path, mode="r", storage_options=options_for(args.url, options)
        )
        result = await run_bench(array, selection, args.repeat)
        print(json.dumps(result, indent=2) if args.json else _text(result))
        return 0

    return run_command(parser.prog, args, body)
