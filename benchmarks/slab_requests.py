"""How many GETs a slab (and a drill) costs, and what they buy: stock zarr-python against
aiozarr under request-shaping settings.

    python -m benchmarks.slab_requests [--layout issue|quick] [--profiles 20ms,cloud]

Layouts (`LAYOUTS`), float32, zstd, written by the zarr-python that runs this, inner
chunks of 256 KiB `(1, 256, 256)` (but in `tiny`, the smoke test's): `issue`, the
zarr-python issue's 256 MiB `(64, 1024, 1024)` in 16 shards of `(16, 512, 512)` (the
slab meets 12 shards; in the edge shards it needs one or two of each time step's four
chunks, so its ranges are broken by gaps of one to three compressed chunks); `quick`,
the suite's quick mode, 64 MiB in 2 shards (the slab is two long runs). The selections
are the suite's (`spec.selection`). Each row: the median time and CPU (this process's,
the emulator's) of `repeats` cold reads (open, then read; every reader once per repeat,
in turn), and the GETs and MB the emulator counted in the last.
Run it with the newest zarr-python (the Python 3.12 venv) to compare with it; aiozarr's
rows take the `aiozarr.config` settings named in the row.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import spec
from benchmarks.runner import server_cpu_s
from benchmarks.server import EmulatorProcess

PATH = "slab/sharded.zarr"
#: name -> (shape, inner chunks, shards): the issue's (slab: 12 shards, runs broken by
#: gaps of one to three chunks), the suite's quick mode (slab: 2 shards, two long runs),
#: and a tiny one for the smoke test.
LAYOUTS = {
    "issue": ((64, 1024, 1024), (1, 256, 256), (16, 512, 512)),
    "quick": ((64, 512, 512), (1, 256, 256), (32, 512, 512)),
    "tiny": ((8, 64, 64), (1, 16, 16), (4, 32, 32)),
}
MiB = 1 << 20
#: aiozarr settings tried, by row name (the defaults first).
SETTINGS: dict[str, dict[str, Any]] = {
    "aiozarr": {},  # gap 64 KiB; runs cut into 2 MiB parts where a batch has < 16 runs
    "aiozarr part=16MiB": {"max_request_bytes": 16 * MiB},
    "aiozarr gap=512KiB part=16MiB": {
        "coalesce_gap_bytes": 512 << 10,
        "max_request_bytes": 16 * MiB,
    },
    # zarr-python 3.4's own shape: sharding_coalesce_max_gap_bytes, _max_bytes
    "aiozarr gap=1MiB part=16MiB": {"coalesce_gap_bytes": MiB, "max_request_bytes": 16 * MiB},
}


def _write(root: Path, mode: spec.Mode) -> np.ndarray:
    import zarr

    data = spec.generate(mode)
    arr = zarr.create_array(
        zarr.storage.LocalStore(root / PATH),
        shape=mode.shape,
        chunks=mode.inner_chunks,
        shards=mode.shards,
        dtype=spec.DTYPE,
        fill_value=0.0,
    )
    arr[...] = data
    return data


def _readers(endpoint: str) -> tuple[dict[str, Callable[[Any], Any]], list[Any]]:
    """Each way of reading, as a function of the selection that opens afresh and reads;
    and the engines to close after."""
    import obstore
    import zarr

    from benchmarks.engines import AiozarrAsync

    s3 = obstore.store.S3Store(spec.BUCKET, prefix=PATH, **spec.storage_options(endpoint))

    def stock(sel: Any) -> Any:
        return zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), mode="r")[sel]

    def pipeline(sel: Any) -> Any:
        with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
            arr = zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), mode="r")
        return arr[sel]

    readers: dict[str, Callable[[Any], Any]] = {
        f"zarr {zarr.__version__}": stock,
        f"zarr {zarr.__version__} + aiozarr.zarr.CodecPipeline": pipeline,
    }
    # aiozarr as the suite runs it: one long-lived event loop per engine (as zarr-python
    # keeps its own), each call under the row's settings
    engines = [AiozarrAsync(endpoint, {"config": s}) for s in SETTINGS.values()]
    for name, engine in zip(SETTINGS, engines, strict=True):
        readers[name] = partial(engine.cold_read, PATH, 3)
    return readers, engines


def _once(emu: EmulatorProcess, read: Any, sel: Any, want: np.ndarray) -> dict[str, Any]:
    """One cold read: seconds, client and emulator CPU seconds, the emulator's GETs, MB."""
    emu.reset()
    server = server_cpu_s(emu.pids) or 0.0
    cpu, began = time.process_time(), time.perf_counter()
    got = read(sel)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    server = (server_cpu_s(emu.pids) or 0.0) - server
    stats = emu.stats()
    if not np.array_equal(np.asarray(got), want):
        raise AssertionError("a read gave other values than were written")
    gets = stats["by_method"].get("GET", 0)
    mb = stats["bytes_read"] / 1e6
    return {"seconds": seconds, "cpu": cpu, "server_cpu": server, "gets": gets, "mb": mb}


def _rows(
    emu: EmulatorProcess,
    readers: dict[str, Any],
    mode: spec.Mode,
    data: np.ndarray,
    plan: tuple[list[str], list[str], int, bool],
) -> list[dict[str, Any]]:
    """The rows of `run`; `plan`: its profiles, workloads, repeats and echo."""
    profiles, workloads, repeats, echo = plan
    rows = []
    for profile, workload in itertools.product(profiles, workloads):
        emu.set_profile(spec.PROFILES[profile])
        sel = spec.selection(workload, mode)
        want = data[sel]
        seen: dict[str, list[dict[str, Any]]] = {name: [] for name in readers}
        for _, (name, read) in itertools.product(range(repeats), readers.items()):
            seen[name].append(_once(emu, read, sel, want))
        for name, runs in seen.items():
            row = {"profile": profile, "workload": workload, "reader": name} | runs[-1]
            for what in ("seconds", "cpu", "server_cpu"):
                row[what] = statistics.median(r[what] for r in runs)
            rows.append(row)
            if echo:
                print(_line(row), flush=True)
    return rows


def run(
    layout: str, profiles: list[str], workloads: list[str], repeats: int, echo: bool = True
) -> list[dict[str, Any]]:
    """Every reader once per repeat, in turn (a busy machine's drift meets them alike);
    per row the median time and CPU, and the GETs and MB of the last repeat."""
    shape, chunks, shards = LAYOUTS[layout]
    mode = spec.Mode(layout, shape, chunks, shards, chunks, 0, 1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = _write(root, mode)
        with EmulatorProcess(root) as emu:
            readers, engines = _readers(emu.endpoint)
            try:
                return _rows(emu, readers, mode, data, (profiles, workloads, repeats, echo))
            finally:
                for engine in engines:
                    engine.close()


def _line(row: dict[str, Any]) -> str:
    return (
        f"| {row['profile']} | {row['workload']} | {row['reader']} "
        f"| {row['seconds'] * 1e3:.0f} | {row['cpu'] * 1e3:.0f} / {row['server_cpu'] * 1e3:.0f} "
        f"| {row['gets']} | {row['mb']:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", default="issue", choices=sorted(LAYOUTS))
    parser.add_argument("--profiles", default="20ms,cloud")
    parser.add_argument("--workloads", default="slab,drill")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"layout {args.layout}: shape, inner chunks, shards {LAYOUTS[args.layout]}")
    print(
        "| profile | workload | reader | median ms | CPU ms: client / emulator | GETs | MB read |"
    )
    print("|---|---|---|--:|--:|--:|--:|")
    run(args.layout, args.profiles.split(","), args.workloads.split(","), args.repeats)


if __name__ == "__main__":
    main()
