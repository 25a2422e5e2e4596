"""`python -m benchmarks [--quick | --full] [--long]`: run the suite, write the tables.

    python -m benchmarks                 # quick mode (64 MiB datasets): 0 ms, 20 ms, cloud
    python -m benchmarks --full --long   # 512 MiB datasets, also at 50 ms
    python -m benchmarks --profiles cloud --workloads full,large-shard   # one profile
    python -m benchmarks --mode tiny --engines aiozarr-async --no-readme   # smoke test
    python -m benchmarks --profile       # pyinstrument profiles of aiozarr's full read and slab

Each (engine, workload, profile) runs in a fresh process (`benchmarks/runner.py`) against
one emulator process, which answers as the profile says (`spec.PROFILES`: first-byte
latency, bandwidth per response, slow tail); results go to
`benchmarks/data/results-<mode>.json` and, unless `--no-readme`, into the tables of
`benchmarks/README.md`.
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

from benchmarks import datasets, interpreters, report, spec
from benchmarks.server import EmulatorProcess

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NEWEST = "newest-zarr"


@dataclass(frozen=True)
class Variant:
    """An engine with its settings and the interpreter that runs it."""

    name: str
    engine: str
    options: dict[str, Any] = field(default_factory=dict)
    interpreter: str = interpreters.PROJECT  # or one of `interpreters.INTERPRETERS`


VARIANTS = [
    Variant("aiozarr-async", "aiozarr-async"),
    Variant("aiozarr-sync", "aiozarr-sync"),
    Variant("tensorstore", "tensorstore"),
    Variant("zarr-obstore", "zarr-obstore"),
    Variant("zarr-obstore-c64", "zarr-obstore", {"concurrency": 64}),
    Variant("zarr-fsspec", "zarr-fsspec"),
    # The newest zarr-python (3.4 when written) alone, then with aiozarr's store, its
    # codec pipeline, and both: what a zarr-python user can switch on.
    Variant("zarr-newest-obstore", "zarr-obstore", interpreter=NEWEST),
    Variant("zarr-newest-obstore-c64", "zarr-obstore", {"concurrency": 64}, interpreter=NEWEST),
    Variant("zarr-newest+Store", "zarr-obstore", {"store": "aiozarr"}, interpreter=NEWEST),
    Variant("zarr-newest+pipeline", "zarr-obstore", {"pipeline": True}, interpreter=NEWEST),
    Variant(
        "zarr-newest+pipeline+Store",
        "zarr-obstore",
        {"store": "aiozarr", "pipeline": True},
        interpreter=NEWEST,
    ),
    Variant("zarrista", "zarrista", interpreter="zarrista"),
    Variant("probe-network", "probe-network"),
    Variant("probe-decode", "probe-decode"),
]

#: The modules each engine imports in its job: an engine lacking one is left out, and
#: the suite says which.
REQUIRES = {
    "aiozarr-async": ("aiozarr",),
    "aiozarr-sync": ("aiozarr",),
    "tensorstore": ("tensorstore",),
    "zarr-obstore": ("zarr", "obstore"),
    "zarr-fsspec": ("zarr", "s3fs"),
    "zarrista": ("zarrista", "obstore"),
    "probe-network": ("obstore",),
    "probe-decode": ("numcodecs",),
}


def _runnable(variant: Variant) -> bool:
    """Whether `variant`'s interpreter can be had and imports what its engine needs;
    if not, print why."""
    if interpreters.resolve(variant.interpreter) is None:
        return False  # `resolve` said why
    lacking = interpreters.missing(variant.interpreter, REQUIRES.get(variant.engine, ()))
    if lacking:
        print(f"skipping {variant.name}: no module {', '.join(lacking)}", flush=True)
    return not lacking


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
    ("large-shard", "large_shard", "big_shard"),
    ("big-read", "big_read", "sharded"),
    ("memory-point", "memory_point", "sharded"),
]


def _applies(variant: Variant, workload: str, profile: spec.Profile) -> bool:
    if workload == "memory_point":
        return variant.name == "aiozarr-sync" and profile.name == "0ms"
    if workload == "big_read":
        return variant.name == "aiozarr-async"
    if variant.engine.startswith("probe-"):
        return workload in ("full", "slab", "drill", "large_shard")
    if variant.engine == "zarrista":
        return workload in ("full", "slab", "drill", "random", "large_shard")  # reads
    return True


def _job(
    variant: Variant,
    row: tuple[str, str, str],
    mode: spec.Mode,
    root: Path,
    manifest: dict[str, Any],
    emu: EmulatorProcess,
    repeats: int,
    profile: spec.Profile,
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
        "dataset": dataset,
        "endpoint": emu.endpoint,
        "controls": emu.controls,
        "server_pids": emu.pids,
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
        if profile.bandwidth_mbps:
            # Parts small enough that one connection's bandwidth is never what limits
            # the probe: it shows the machine's limit.
            job["part_bytes"] = 1 << 20
    return job


def profiles_of(args: argparse.Namespace, mode: spec.Mode) -> list[spec.Profile]:
    """The profiles to run: `--profiles`, else `--latencies`, else the mode's default."""
    known = dict(spec.PROFILES)
    if args.profiles:
        names = list(args.profiles)
    elif args.latencies:
        names = [f"{ms:g}ms" for ms in args.latencies]
        for name, ms in zip(names, args.latencies, strict=True):
            known.setdefault(name, spec.Profile(name, ms))
    else:
        names = ["0ms"] if mode.name == "tiny" else ["0ms", "20ms", "cloud"]
    if args.long and "50ms" not in names:
        names.append("50ms")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown profile(s) {unknown}; known: {sorted(known)}")
    return [known[n] for n in names]


def _run_job(variant: Variant, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    python = interpreters.resolve(variant.interpreter)
    if python is None:
        return {"ok": False, "error": f"no interpreter for {variant.interpreter}"}
    try:
        done = subprocess.run(
            [python, "-m", "benchmarks.runner"],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            cwd=REPO,
            env=interpreters.child_env(),
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
    # An engine whose interpreter or modules cannot be had is left out, with the reason.
    variants = [v for v in variants if _runnable(v)]
    rows = [r for r in WORKLOADS if args.workloads is None or r[0] in args.workloads]
    profiles = profiles_of(args, mode)
    repeats = args.repeats or mode.repeats
    results: list[dict[str, Any]] = []
    with EmulatorProcess(root, workers=args.server_workers) as emu:
        for profile in profiles:
            for row in rows:
                for variant in variants:
                    if not _applies(variant, row[1], profile):
                        continue
                    emu.set_profile(profile)
                    times = _repeats(args, repeats, profile)
                    job = _job(variant, row, mode, root, manifest, emu, times, profile)
                    if args.profile:
                        profile_dir = HERE / "data" / "profiles"
                        profile_dir.mkdir(parents=True, exist_ok=True)
                        job["profile"] = str(
                            profile_dir / f"{variant.name}-{row[0]}-{profile.name}.txt"
                        )
                    result = _run_job(variant, job, args.timeout)
                    if result.get("error", "").startswith("exit status -"):
                        # Killed by a signal (obstore has aborted once in ~20 probe runs
                        # here): run it once more and say so in the results.
                        result = _run_job(variant, job, args.timeout) | {"retried": True}
                    if row[1] == "write":
                        _check_write(root, job, manifest, result)
                    result.update(
                        engine=variant.name,
                        row=row[0],
                        profile=profile.name,
                        latency_ms=profile.latency_ms,
                    )
                    results.append(result)
                    shown = f"{result['median_s']:.3f} s" if "median_s" in result else "-"
                    flag = "ok" if result.get("ok") else f"FAILED {result.get('error')}"
                    print(
                        f"{profile.name:>5}  {row[0]:<19} {variant.name:<24} {shown:>9}  {flag}",
                        flush=True,
                    )
    return {
        "mode": mode.name,
        "nbytes": mode.nbytes,
        "large_shard_nbytes": mode.big_shard_nbytes,
        "manifest": manifest,
        "profiles": [vars(p) for p in profiles],
        "results": results,
        "repeats": repeats,
        "machine": report.machine(args.server_workers),
        "tail_repeats": _repeats(args, repeats, spec.PROFILES["cloud"]),
    }


# Repeats on a profile with a slow tail, where the mode repeats at all (not tiny): 2 % of
# answers +200 ms meets a 35-request read in half its repeats, so a median of 3 is
# mostly luck.
TAIL_REPEATS = 5


def _repeats(args: argparse.Namespace, repeats: int, profile: spec.Profile) -> int:
    if args.repeats or not profile.tail_rate or repeats < 2:
        return repeats
    return max(repeats, TAIL_REPEATS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="mode", action="store_const", const="quick")
    size.add_argument("--full", dest="mode", action="store_const", const="full")
    size.add_argument("--mode", choices=sorted(spec.MODES))
    parser.add_argument("--long", action="store_true", help="also at 50 ms latency")
    parser.add_argument(
        "--profiles",
        type=lambda s: s.split(","),
        help=f"comma-separated, of {', '.join(spec.PROFILES)} "
        "(default: 0ms,20ms,cloud; tiny mode: 0ms)",
    )
    parser.add_argument("--engines", type=lambda s: s.split(","), help="comma-separated")
    parser.add_argument("--workloads", type=lambda s: s.split(","), help="comma-separated")
    parser.add_argument(
        "--latencies",
        type=lambda s: [float(x) for x in s.split(",")],
        help="latency-only profiles, in ms (instead of --profiles)",
    )
    parser.add_argument("--repeats", type=int)
    parser.add_argument(
        "--server-workers",
        type=int,
        default=1,
        help="emulator processes sharing its port (a machine with cores to spare)",
    )
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
