"""The two limit probes: how fast could any engine be on this machine?

- network: fetch exactly the compressed bytes a read needs with obstore, all at once
  (contiguous ranges merged, then cut into parts of at most 4 MiB, 1 MiB where each
  response's bandwidth is capped, so big objects stream in parallel and the limit is the
  machine's, not one connection's), and nothing else: no metadata, no index, no decoding.
- decode: decompress the same chunks (read from local disk beforehand) on a pool of
  one thread per core into the output array, and nothing else: no I/O at all.

The larger of the two is the floor an engine that overlaps I/O and decoding can reach.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

PART_BYTES = 4 << 20
_LOOP = asyncio.new_event_loop()


def _merged(chunks: list[dict[str, Any]], part: int) -> list[tuple[str, int, int]]:
    by_key: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        by_key.setdefault(c["key"], []).append((c["start"], c["stop"]))
    parts = []
    for key, ranges in by_key.items():
        ranges.sort()
        merged = [list(ranges[0])]
        for start, stop in ranges[1:]:
            if start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], stop)
            else:
                merged.append([start, stop])
        for start, stop in merged:
            parts += [(key, s, min(s + part, stop)) for s in range(start, stop, part)]
    return parts


def network(
    options: dict[str, Any], bucket: str, chunks: list[dict[str, Any]], part: int = PART_BYTES
) -> int:
    """Fetch the needed bytes in parts of at most `part` bytes; returns how many arrived."""
    import obstore
    from obstore.store import S3Store

    store = S3Store(bucket, **options)
    parts = _merged(chunks, part)

    async def go() -> int:
        answers = await asyncio.gather(
            *(obstore.get_range_async(store, key, start=s, end=e) for key, s, e in parts)
        )
        return sum(len(memoryview(a)) for a in answers)

    # One loop for every repeat: obstore's runtime outlives a closed loop poorly.
    return _LOOP.run_until_complete(go())


class DecodeProbe:
    """Decodes `chunks` of the array stored under `root` (bytes loaded at construction)."""

    def __init__(
        self, root: Path, chunks: list[dict[str, Any]], zarr_format: int, shape: tuple[int, ...]
    ) -> None:
        import numcodecs

        self.chunks = chunks
        self.codec = numcodecs.Zstd() if zarr_format == 3 else None
        self.blosc = numcodecs.Blosc() if zarr_format == 2 else None
        self.raw = [(root / c["key"]).read_bytes()[c["start"] : c["stop"]] for c in chunks]
        self.lo = [min(c["out"][d][0] for c in chunks) for d in range(len(shape))]
        hi = [max(c["out"][d][1] for c in chunks) for d in range(len(shape))]
        self.box = tuple(h - lo for h, lo in zip(hi, self.lo, strict=False))

    def run(self, sel: Any) -> np.ndarray:
        """Decode every chunk into a buffer covering them; returns `sel` of the array."""
        out = np.empty(self.box, dtype="<f4")
        codec = self.codec or self.blosc
        assert codec is not None

        def one(i: int) -> None:
            c = self.chunks[i]
            full = np.frombuffer(codec.decode(self.raw[i]), dtype="<f4").reshape(c["chunk"])
            dst = tuple(
                slice(a - lo, b - lo) for (a, b), lo in zip(c["out"], self.lo, strict=False)
            )
            out[dst] = full[tuple(slice(0, b - a) for a, b in c["out"])]

        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            list(pool.map(one, range(len(self.chunks))))
        rel = tuple(
            slice(None)
            if s == slice(None)
            else (slice(s.start - lo, s.stop - lo) if isinstance(s, slice) else s - lo)
            for s, lo in zip(sel, self.lo, strict=False)
        )
        return out[rel]
