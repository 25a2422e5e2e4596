"""One job in a fresh process: `python -m benchmarks.runner < job.json > result.json`.

A job names an engine (or a probe), a workload and a dataset. The runner times the
workload `repeats` times, resets and reads the emulator's counters around each repeat,
checks the values against the manifest's checksum and prints one JSON result.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import server, spec


def _rss_mb() -> float:
    """Peak resident memory of this process, in MiB.

    Linux's `ru_maxrss` survives `exec`: a job started by a parent that had grown large
    would report the parent's peak. `VmHWM` belongs to this process's own memory map.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def server_cpu_s(pids: list[int]) -> float | None:
    """CPU seconds the emulator processes' threads have run (ns resolution); None off
    Linux."""
    if not pids:
        return None
    try:
        tasks = [t for pid in pids for t in Path(f"/proc/{pid}/task").iterdir()]
        return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _repeat(job: dict[str, Any], fn: Any) -> tuple[list[float], list[dict[str, Any]], Any]:
    times, stats, value = [], [], None
    cpu, server_cpu = job.setdefault("_cpu_s", []), job.setdefault("_server_cpu_s", [])
    controls, pids = job.get("controls") or [job["endpoint"]], job.get("server_pids", [])
    profiler = job.get("_profiler")
    if profiler is not None:
        profiler.start()
    for _ in range(job["repeats"]):
        server.reset(*controls)
        value = None  # the last repeat's result must not count in this one's peak memory
        s0 = server_cpu_s(pids)
        c0 = time.process_time()  # every thread of this process: loop, pools, runtimes
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        s1 = server_cpu_s(pids)
        if s0 is not None and s1 is not None:
            server_cpu.append(s1 - s0)
        # One job's peak in a fresh process: later repeats add what the allocator keeps
        # of freed buffers (glibc holds freed 16 MiB bodies in its arenas).
        job.setdefault("_first_rss_mb", _rss_mb())
        stats.append(server.stats(*controls))
    if profiler is not None:
        profiler.stop()
    return times, stats, value


def _engine_job(job: dict[str, Any], result: dict[str, Any]) -> None:
    from benchmarks.engines import ENGINES

    engine = ENGINES[job["engine"]](job["endpoint"], job.get("options", {}))
    try:
        _workload(engine, job, result)
    finally:
        engine.close()


def _workload(engine: Any, job: dict[str, Any], result: dict[str, Any]) -> None:
    mode = spec.MODES[job["mode"]]
    result["versions"] = engine.versions()
    workload, path, fmt = job["workload"], job["path"], job.get("zarr_format", 3)
    if workload in ("full", "slab", "drill", "big_read", "large_shard"):
        sel = spec.selection(workload, mode)
        times, stats, value = _repeat(job, lambda: engine.cold_read(path, fmt, sel))
        result["checksum"] = spec.checksum(value)
    elif workload == "random":
        handle = engine.open(path, fmt)
        points = spec.random_points(mode)
        engine.read(handle, points[0])  # warm: metadata and shard indexes cached
        per_read: list[float] = []  # every repeat's: the tail shows in p99 of them all

        def read_points() -> list[Any]:
            values, seconds = engine.read_points(handle, points)
            per_read.extend(seconds)
            return values  # type: ignore[no-any-return]

        times, stats, values = _repeat(job, read_points)
        result["checksum"] = spec.checksum(values)
        result["per_read_s"] = per_read
        result["reads_per_repeat"] = len(points)
    elif workload == "group":
        times, stats, listing = _repeat(job, lambda: engine.group_listing(path))
        result["checksum"] = spec.group_listing_checksum(listing)
    elif workload == "memory_point":
        times, stats, per_call = _repeat(job, lambda: _memory_point(mode))
        result["checksum"] = None
        result["per_read_s"] = per_call
    elif workload == "write":
        data = np.load(Path(job["root"]) / "source.npy")
        times, stats, _ = _repeat(job, lambda: engine.write(path, data, mode))
        result["checksum"] = None  # checked by the parent, which reads what was written
    else:
        raise ValueError(f"unknown workload {workload!r}")
    result.update(times=times, stats=stats)


def _memory_point(mode: spec.Mode, calls: int = 2000) -> list[float]:
    """Seconds per one-element read of an in-memory array through the sync facade."""
    import aiozarr
    from aiozarr.storage.backends.memory import MemoryStore

    arr = aiozarr.create_array(
        MemoryStore(),
        shape=mode.shape,
        dtype=spec.DTYPE,
        chunks=mode.inner_chunks,
        shards=mode.shards,
        fill_value=0.0,
    )
    arr[0] = np.ones(mode.shape[1:], dtype=spec.DTYPE)
    arr[0, 0, 0]  # warm: portal thread started, shard index cached
    t0 = time.perf_counter()
    for i in range(calls):
        arr[0, i % mode.shape[1], 1]
    return [(time.perf_counter() - t0) / calls]


def _probe_job(job: dict[str, Any], result: dict[str, Any]) -> None:
    from benchmarks import probes

    mode = spec.MODES[job["mode"]]
    chunks = job["chunks"]
    if job["engine"] == "probe-network":
        import obstore

        result["versions"] = {"obstore": obstore.__version__}
        part = job.get("part_bytes", probes.PART_BYTES)
        times, stats, got = _repeat(
            job, lambda: probes.network(job["storage_options"], spec.BUCKET, chunks, part)
        )
        needed = sum(c["stop"] - c["start"] for c in chunks)
        result["checksum"] = "bytes-ok" if got == needed else f"got {got} of {needed} bytes"
    else:
        import numcodecs

        result["versions"] = {"numcodecs": numcodecs.__version__}
        probe = probes.DecodeProbe(Path(job["root"]), chunks, job["zarr_format"], mode.shape)
        sel = spec.selection(job["workload"], mode)
        times, stats, value = _repeat(job, lambda: probe.run(sel))
        result["checksum"] = spec.checksum(value)
    result.update(times=times, stats=stats)


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Run `job`; the result always has `ok` and, when it failed, `error`."""
    result: dict[str, Any] = {"python": sys.version.split()[0]}
    try:
        if job.get("profile"):
            from pyinstrument import Profiler

            job["_profiler"] = Profiler(interval=0.0005, async_mode="disabled")
        if job["engine"].startswith("probe-"):
            _probe_job(job, result)
        else:
            _engine_job(job, result)
        if job.get("_profiler") is not None:
            text = job["_profiler"].output_text(unicode=True, show_all=False)
            Path(job["profile"]).write_text(text)
        expected = job.get("expected")
        result["ok"] = expected is None or result["checksum"] in (expected, "bytes-ok")
        if not result["ok"]:
            result["error"] = f"wrong values: checksum {result['checksum']} != {expected}"
    except Exception as exc:
        result.update(
            ok=False,
            error=f"{type(exc).__name__}: {exc}"[:300],
            traceback=traceback.format_exc()[-2000:],
        )
    result["rss_mb"] = _rss_mb()
    result["first_rss_mb"] = job.get("_first_rss_mb", result["rss_mb"])
    if result.get("times"):
        result["median_s"] = statistics.median(result["times"])
    for name in ("cpu_s", "server_cpu_s"):
        if job.get(f"_{name}"):
            result[f"median_{name}"] = statistics.median(job[f"_{name}"])
    return result


if __name__ == "__main__":
    print(json.dumps(run(json.load(sys.stdin))), flush=True)
    # Skip interpreter finalization: obstore's runtime can abort (SIGABRT) while its threads
    # are torn down, which would turn a finished, printed job into a failed one.
    os._exit(0)
