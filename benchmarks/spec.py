"""What is measured: modes (dataset sizes), network profiles, datasets, workload
selections and checksums.

Pure numpy, no aiozarr or zarr import: the runner imports this module in every engine's
interpreter (the project's venv and the Python 3.12 venv with the newest zarr-python).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

BUCKET = "bench"
DTYPE = "float32"


@dataclass(frozen=True)
class Mode:
    """Sizes of one benchmark mode. Inner chunks are 256 KiB and shards 32 MiB in the
    quick and full modes, as the issue asks; the tiny mode keeps the same proportions."""

    name: str
    shape: tuple[int, int, int]  # (time, y, x)
    inner_chunks: tuple[int, int, int]  # sharded dataset's inner chunks
    shards: tuple[int, int, int]
    chunks: tuple[int, int, int]  # unsharded v3 and v2 chunks
    group_arrays: int
    repeats: int
    random_reads: int = 100
    # The large-shard dataset: two time steps, each one shard of `big_shard` read whole.
    big_shard: tuple[int, int, int] = (1, 4096, 8192)  # 128 MiB

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * 4

    @property
    def big_shape(self) -> tuple[int, int, int]:
        return (2 * self.big_shard[0], *self.big_shard[1:])

    @property
    def big_shard_nbytes(self) -> int:
        return int(np.prod(self.big_shard)) * 4

    def layout(self, dataset: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """`(shape, chunks, shards)` of an array dataset; shards == chunks when unsharded."""
        if dataset == "sharded":
            return self.shape, self.inner_chunks, self.shards
        if dataset == "big_shard":
            return self.big_shape, self.inner_chunks, self.big_shard
        return self.shape, self.chunks, self.chunks


MODES = {
    "tiny": Mode(
        "tiny", (8, 64, 64), (1, 16, 16), (4, 32, 32), (1, 32, 32), 20, 1, 10, (1, 64, 64)
    ),
    # 64 MiB: 2 shards along time, so the drill crosses a shard boundary. The large shard
    # is 64 MiB, half the full mode's, so a quick run stays quick.
    "quick": Mode(
        "quick",
        (64, 512, 512),
        (1, 256, 256),
        (32, 512, 512),
        (1, 512, 512),
        200,
        3,
        big_shard=(1, 4096, 4096),
    ),
    # 512 MiB: 16 shards; the large shard is 128 MiB.
    "full": Mode("full", (128, 1024, 1024), (1, 256, 256), (32, 512, 512), (1, 512, 512), 200, 5),
}


def storage_options(endpoint: str) -> dict[str, Any]:
    """obstore `S3Store` settings that reach the emulator at `endpoint` (anonymous, plain
    HTTP). Here, not imported from `aiozarr.emulator`: the newest zarr-python's jobs run
    in a venv without aiozarr."""
    return {
        "endpoint": endpoint,
        "region": "us-east-1",
        "skip_signature": True,
        "virtual_hosted_style_request": False,
        "client_options": {"allow_http": True},
    }


@dataclass(frozen=True)
class Profile:
    """How the emulator answers: first-byte latency, bandwidth per response, slow tail."""

    name: str
    latency_ms: float
    bandwidth_mbps: float = 0.0  # MB/s (10^6 bytes) per response; 0: unlimited
    tail_rate: float = 0.0  # fraction of answers held back `tail_ms` more
    tail_ms: float = 0.0


PROFILES = {
    "0ms": Profile("0ms", 0.0),
    "20ms": Profile("20ms", 20.0),
    "50ms": Profile("50ms", 50.0),
    # One S3 request stream: ~90 MB/s, a first byte after ~20 ms, a few percent slow.
    "cloud": Profile("cloud", 20.0, bandwidth_mbps=90.0, tail_rate=0.02, tail_ms=200.0),
}

#: Array datasets: name -> (path in the bucket, description).
ARRAYS = {
    "sharded": "sharded.zarr",
    "unsharded": "unsharded.zarr",
    "v2": "v2.zarr",
    "big_shard": "big_shard.zarr",
}
GROUPS = {
    "group": "group.zarr",
    "group_consolidated": "group_consolidated.zarr",
}


def generate(mode: Mode, shape: tuple[int, int, int] | None = None) -> np.ndarray:
    """Smooth travelling waves plus quantised noise (like a gridded temperature field),
    float32 rounded to 0.01: compresses about 2x with zstd, as real model output does.
    `shape`: another shape than the mode's (the large-shard dataset's)."""
    shape = shape or mode.shape
    t_n, y_n, x_n = shape
    out = np.empty(shape, dtype=np.float32)
    y = np.linspace(0.0, 1.0, y_n, dtype=np.float64)[:, None]
    x = np.linspace(0.0, 1.0, x_n, dtype=np.float64)[None, :]
    rng = np.random.default_rng(42)
    for t in range(t_n):
        phase = 2 * np.pi * t / max(t_n, 1)
        field = 15 + 10 * np.sin(2 * np.pi * 2 * x + phase) * np.cos(2 * np.pi * 1.5 * y)
        field += 3 * np.sin(2 * np.pi * (5 * x + 3 * y) - 2 * phase)
        field += rng.normal(0.0, 0.3, size=(y_n, x_n))
        out[t] = np.round(field, 2)
    return out


def selection(workload: str, mode: Mode) -> Any:
    """The selection a read workload makes (numpy basic indexing)."""
    _, y_n, x_n = mode.shape
    if workload in ("full", "big_read"):
        return (slice(None), slice(None), slice(None))
    if workload == "large_shard":
        # The second time step of the large-shard dataset: exactly one shard, whole.
        return (1, slice(None), slice(None))
    if workload == "slab":
        # 1/8 of the array, starting off every chunk and shard boundary.
        return tuple(slice(n // 7, n // 7 + n // 2) for n in mode.shape)
    if workload == "drill":
        return (slice(None), (2 * y_n) // 5 + 1, (3 * x_n) // 7 + 1)
    raise ValueError(f"no selection for workload {workload!r}")


def random_points(mode: Mode) -> list[tuple[int, int, int]]:
    """The single elements the random-read workload reads, fixed by a seed."""
    rng = np.random.default_rng(7)
    return [tuple(int(rng.integers(0, n)) for n in mode.shape) for _ in range(mode.random_reads)]


def checksum(values: Any) -> str:
    """A digest of the values as contiguous little-endian float32 (exact comparison)."""
    arr = np.ascontiguousarray(np.asarray(values, dtype="<f4"))
    # hashed in place: a bytes copy of a 512 MiB result was the peak memory the table
    # reported "after repeats" for every engine
    return hashlib.blake2b(memoryview(arr).cast("B"), digest_size=16).hexdigest()


def group_listing_checksum(entries: list[tuple[str, tuple[int, ...], str]]) -> str:
    """A digest of `(name, shape, dtype)` for every array of a group, in name order."""
    text = "\n".join(
        f"{n}:{tuple(int(s) for s in shp)}:{np.dtype(d).str}" for n, shp, d in sorted(entries)
    )
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def group_member_shape(i: int) -> tuple[int, int]:
    """Shape of array `i` of the 200-array group (they differ, so a mix-up shows)."""
    return (10 + i % 7, 20 + i % 5)
