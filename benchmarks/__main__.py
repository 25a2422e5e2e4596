"""`python -m benchmarks [--quick | --full] [--long]`: run the suite, write the tables.

    python -m benchmarks                 # quick mode (64 MiB datasets), 0 and 20 ms
    python -m benchmarks --full --long   # 512 MiB datasets, 0, 20 and 50 ms
    python -m benchmarks --mode tiny --engines aiozarr-async --no-readme   # smoke test
    python -m benchmarks --profile       # pyinstrument profiles of aiozarr's full read and slab

Each (engine, workload, latency) runs in a fresh process (`benchmarks/runner.py`) against
one emulator process; results go to `benchmarks/data/results-<mode>.json` and, unless
`--no-readme`, into the tables of `benchmarks/README.md`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import datasets, report, spec
from benchmarks.server import EmulatorProcess

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENV312 = HERE / ".venv312" / "bin" / "python"


@dataclass(frozen=True)
class Variant:
    """An engine with its settings and the interpreter that runs it."""

    name: str
    engine: str
    options: dict[str, Any] = field(default_factory=dict)
    newest: bool = False  # runs in the Python 3.12 venv with the newest zarr-python


VARIANTS = [
    Variant("aiozarr-async", "aiozarr-async"),
    Variant("aiozarr-sync", "aiozarr-sync"),
    Variant("tensorstore", "tensorstore"),
    Variant("zarr-obstore", "zarr-obstore"),
    Variant("zarr-obstore-c64", "zarr-obstore", {"concurrency": 64}),
    Variant("zarr-fsspec", "zarr-fsspec"),
    Variant("zarr-newest-obstore", "zarr-obstore", newest=True),
    Variant("zarr-newest-obstore-c64", "zarr-obstore", {"concurrency": 64}, newest=True),
    Variant("probe-network", "probe-network"),
    Variant("probe-decode", "probe-decode"),
]

#: (row name, workload, dataset); which variants run each is decided in `_applies`.
WORKLOADS = [
    ("full", "full", "sharded"),
    ("full-unsharded", "full", "unsharded"),
    ("full-v2", "full", "v2"),
    ("slab", "slab", "sharded"),
    ("drill", "drill", "sharded"),
    ("random", "random", "sharded"),
    ("group", "group", "group"),
    ("group-consolidated", "group", "group_consolidated"),
    ("write", "write", "sharded"),
    ("big-read", "big_read", "sharded"),
    ("memory-point", "memory_point", "sharded"),
]


def _applies(variant: Variant, workload: str, latency: float) -> bool:
    if workload == "memory_point":
        return variant.name == "aiozarr-sync" and latency == 0
    if workload == "big_read":
        return variant.name == "aiozarr-async"
    if variant.engine.startswith("probe-"):
        return workload in ("full", "slab", "drill")
    return True


def _job(
    variant: Variant,
    row: tuple[str, str, str],
    mode: spec.Mode,
    root: Path,
    manifest: dict[str, Any],
    emu: EmulatorProcess,
    repeats: int,
) -> dict[str, Any]:
    _, workload, dataset = row
    is_group = dataset in spec.GROUPS
    path = spec.GROUPS[dataset] if is_group else spec.ARRAYS[dataset]
    job: dict[str, Any] = {
        "engine": variant.engine,
        "options": dict(variant.options),
        "workload": workload,
        "mode": mode.name,
        "path": path,
        "zarr_format": 2 if dataset == "v2" else 3,
        "endpoint": emu.endpoint,
        "server_pid": emu.pid,
        "root": str(root),
        "repeats": repeats,
        "storage_options": emu.storage_options(),
        "expected": manifest["expected"].get("full" if workload == "big_read" else workload),
    }
    if workload == "write":
        job["path"] = f"write/{variant.name}.zarr"
        job["expected"] = None
    if workload == "big_read":
        job["options"]["max_inflight_bytes"] = mode.nbytes // 16
    if variant.engine.startswith("probe-"):
        job["chunks"] = datasets.needed_chunks(mode, root, dataset, workload)
    return job


def _run_job(variant: Variant, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    python = str(VENV312) if variant.newest else sys.executable
    try:
        done = subprocess.run(
            [python, "-m", "benchmarks.runner"],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        detail = (done.stderr or "no output").strip()[-300:]
        return {"ok": False, "error": f"exit status {done.returncode}: {detail}"}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def _check_write(
    root: Path, job: dict[str, Any], manifest: dict[str, Any], result: dict[str, Any]
) -> None:
    """Read what the engine wrote with zarr-python, from disk, and compare."""
    written = root / job["path"]
    if result.get("ok"):
        try:
            import zarr

            got = spec.checksum(zarr.open_array(str(written), mode="r")[...])
            result["checksum"] = got
            if got != manifest["expected"]["full"]:
                result.update(ok=False, error="wrong values written")
        except Exception as exc:
            result.update(ok=False, error=f"written array unreadable: {exc}"[:300])
    shutil.rmtree(written, ignore_errors=True)


def run_suite(args: argparse.Namespace) -> dict[str, Any]:
    """Run every selected job; returns the results document."""
    mode = spec.MODES[args.mode]
    root = Path(args.data_dir) / mode.name
    t0 = time.perf_counter()
    manifest = datasets.ensure(mode, root)
    print(f"datasets ready in {root} ({time.perf_counter() - t0:.1f} s)", flush=True)
    variants = [v for v in VARIANTS if args.engines is None or v.name in args.engines]
    if any(v.newest for v in variants) and not VENV312.exists():
        print(f"skipping the newest zarr-python: {VENV312} missing (see README)", flush=True)
        variants = [v for v in variants if not v.newest]
    rows = [r for r in WORKLOADS if args.workloads is None or r[0] in args.workloads]
    latencies = args.latencies or ([0.0] if mode.name == "tiny" else [0.0, 20.0])
    if args.long and 50.0 not in latencies:
        latencies.append(50.0)
    repeats = args.repeats or mode.repeats
    results: list[dict[str, Any]] = []
    with EmulatorProcess(root) as emu:
        for latency in latencies:
            emu.set_latency(latency)
            for row in rows:
                for variant in variants:
                    if not _applies(variant, row[1], latency):
                        continue
                    job = _job(variant, row, mode, root, manifest, emu, repeats)
                    if args.profile:
                        profile_dir = HERE / "data" / "profiles"
                        profile_dir.mkdir(parents=True, exist_ok=True)
                        job["profile"] = str(
                            profile_dir / f"{variant.name}-{row[0]}-{latency:g}ms.txt"
                        )
                    result = _run_job(variant, job, args.timeout)
                    if result.get("error", "").startswith("exit status -"):
                        # Killed by a signal (obstore has aborted once in ~20 probe runs
                        # here): run it once more and say so in the results.
                        result = _run_job(variant, job, args.timeout) | {"retried": True}
                    if row[1] == "write":
                        _check_write(root, job, manifest, result)
                    result.update(engine=variant.name, row=row[0], latency_ms=latency)
                    results.append(result)
                    shown = f"{result['median_s']:.3f} s" if "median_s" in result else "-"
                    flag = "ok" if result.get("ok") else f"FAILED {result.get('error')}"
                    print(
                        f"{latency:>4g} ms  {row[0]:<19} {variant.name:<24} {shown:>9}  {flag}",
                        flush=True,
                    )
    return {
        "mode": mode.name,
        "nbytes": mode.nbytes,
        "manifest": manifest,
        "latencies": latencies,
        "results": results,
        "repeats": repeats,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="mode", action="store_const", const="quick")
    size.add_argument("--full", dest="mode", action="store_const", const="full")
    size.add_argument("--mode", choices=sorted(spec.MODES))
    parser.add_argument("--long", action="store_true", help="also at 50 ms latency")
    parser.add_argument("--engines", type=lambda s: s.split(","), help="comma-separated")
    parser.add_argument("--workloads", type=lambda s: s.split(","), help="comma-separated")
    parser.add_argument("--latencies", type=lambda s: [float(x) for x in s.split(",")])
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per job")
    parser.add_argument("--data-dir", default=str(HERE / "data"))
    parser.add_argument("--out", help="results JSON (default: DATA_DIR/results-MODE.json)")
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="pyinstrument profiles of aiozarr-async's full read and slab",
    )
    args = parser.parse_args(argv)
    args.mode = args.mode or "quick"
    if args.profile:
        args.engines = args.engines or ["aiozarr-async"]
        args.workloads = args.workloads or ["full", "slab"]
        args.no_readme = True
    document = run_suite(args)
    out = Path(args.out or Path(args.data_dir) / f"results-{args.mode}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1))
    print(f"results: {out}")
    if not args.no_readme:
        report.write_readme(document, HERE / "README.md")
        print(f"tables: {HERE / 'README.md'}")
    return 0 if all(r.get("ok") for r in document["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
