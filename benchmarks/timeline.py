"""`python -m benchmarks.timeline`: when each request of one read lands, and when its
chunks are decoded, from aiozarr's debug log.

    python -m benchmarks.timeline                           # large-shard, cloud profile
    python -m benchmarks.timeline --workload full --profile 20ms

The array is opened first, so the timeline is the read alone. Every request line of the
`aiozarr.store` logger and every decode line of `aiozarr.read` says how long it took;
the moment it was logged is its end. The summary says how much of the decoding was done
before the read's last byte landed: the overlap of the network and the codec pool.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import datasets, spec
from benchmarks.server import EmulatorProcess

HERE = Path(__file__).resolve().parent

# "read 'big.zarr/c/1/0/0' (4194304 bytes): ok in 61.2 ms", "decoded 3 chunks of ... in 2.1 ms"
_SPAN = re.compile(r"^(?P<what>\w+) .*?in (?P<ms>[\d.]+) ms$")
_BYTES = re.compile(r"\((\d+) bytes\)")

#: Workload -> (dataset, the selection's workload).
_DATASETS = {
    "large-shard": ("big_shard", "large_shard"),
    "full": ("sharded", "full"),
    "full-unsharded": ("unsharded", "full"),
    "full-v2": ("v2", "full"),
    "slab": ("sharded", "slab"),
    "drill": ("sharded", "drill"),
}


@dataclass(frozen=True)
class Span:
    """One request or decode group: what, when it started and ended (ms from the read's
    start), and how many bytes it moved or produced."""

    kind: str
    start: float
    end: float
    nbytes: int
    text: str


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[float, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((time.monotonic(), record.name, record.getMessage()))


def spans(records: list[tuple[float, str, str]]) -> list[Span]:
    """The request and decode spans of `(seconds since the read began, logger, message)`
    log lines, by start time."""
    found = []
    for at, logger, message in records:
        span = _SPAN.match(message)
        if span is None or not (message.startswith("decoded") or ": ok in" in message):
            continue
        end = at * 1000
        size = _BYTES.search(message)
        kind = "decode" if logger == "aiozarr.read" else span["what"]
        found.append(
            Span(
                kind,
                end - float(span["ms"]),
                end,
                int(size[1]) if size else 0,
                message,
            )
        )
    return sorted(found, key=lambda s: s.start)


def draw(found: list[Span], width: int = 60) -> str:
    """One line per span: its kind, start and end, size, and a bar on a shared time axis."""
    total = max(s.end for s in found)
    lines = [f"{'':8} {'start':>7} {'end':>7} {'MiB':>6}  0 ms{'':{width - 10}}{total:6.0f} ms"]
    for s in found:
        left = round(max(s.start, 0) / total * width)
        right = max(left + 1, round(s.end / total * width))
        bar = " " * left + ("#" if s.kind == "decode" else "=") * (right - left)
        lines.append(
            f"{s.kind:8} {s.start:7.1f} {s.end:7.1f} {s.nbytes / 2**20:6.2f}  |{bar:{width}}|"
        )
    return "\n".join(lines)


def summary(found: list[Span]) -> str:
    """When decoding began against when the read's last byte landed."""
    reads = [s for s in found if s.kind == "read"]
    decodes = [s for s in found if s.kind == "decode"]
    if not reads or not decodes:
        return f"{len(reads)} requests, {len(decodes)} decode groups: no overlap to show."
    last_byte = max(s.end for s in reads)
    early = [s for s in decodes if s.start < last_byte]
    mib = 2**20
    return (
        f"{len(reads)} requests, {len(decodes)} decode groups. The first decode group "
        f"started at {min(s.start for s in decodes):.0f} ms, the last byte landed at "
        f"{last_byte:.0f} ms: {len(early)} groups ({sum(s.nbytes for s in early) / mib:.0f} "
        f"of {sum(s.nbytes for s in decodes) / mib:.0f} MiB) were handed to the codec pool "
        f"before it. The read ended at {max(s.end for s in found):.0f} ms."
    )


async def _read(
    options: dict[str, Any], path: str, selection: object
) -> list[tuple[float, str, str]]:
    import aiozarr

    arr = await aiozarr.open_array_async(
        f"s3://{spec.BUCKET}/{path}", mode="r", storage_options=options
    )
    collector = _Collector()
    logger = logging.getLogger("aiozarr")
    level = logger.level
    logger.addHandler(collector)
    logger.setLevel(logging.DEBUG)
    began = time.monotonic()
    try:
        await arr.getitem(selection)
    finally:
        logger.removeHandler(collector)
        logger.setLevel(level)
    return [(at - began, name, message) for at, name, message in collector.records]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.timeline", description=__doc__)
    parser.add_argument("--workload", default="large-shard", choices=sorted(_DATASETS))
    parser.add_argument("--profile", default="cloud", choices=sorted(spec.PROFILES))
    parser.add_argument("--mode", default="quick", choices=sorted(spec.MODES))
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    mode = spec.MODES[args.mode]
    root = args.data_dir / mode.name
    datasets.ensure(mode, root)
    with EmulatorProcess(root) as emulator:
        emulator.set_profile(spec.PROFILES[args.profile])
        dataset, workload = _DATASETS[args.workload]
        records = asyncio.run(
            _read(
                emulator.storage_options(),
                spec.ARRAYS[dataset],
                spec.selection(workload, mode),
            )
        )
    found = spans(records)
    print(f"{args.workload} on the {args.profile} profile ({mode.name} mode)")
    print(draw(found))
    print(summary(found))


if __name__ == "__main__":
    main()
