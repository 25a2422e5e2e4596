"""`python -m benchmarks.xarray_bench`: aiozarr's xarray backend and dask integration
against xarray's own zarr engine (zarr-python over s3fs) and xarray-tensorstore.

    python -m benchmarks.xarray_bench                  # 20 ms, 3 repeats, writes the README section
    python -m benchmarks.xarray_bench --repeats 1 --no-readme
    python -m benchmarks.xarray_bench --workloads open,load --engines aiozarr,xarray-zarr

Workloads, each repeat in a fresh process (`--job` reads one job as JSON on stdin):

- `open`: open a 20-variable, 4-coordinate v3 dataset written by `Dataset.to_zarr`
  (zarr-python), consolidated and not.
- `load`: load 4 of its variables (`await ds[vars].load_async()` for aiozarr,
  `ds[vars].load()` for xarray's engine); the dataset is opened before the clock starts.
- `dask-sum`: sum the 64 MiB sharded benchmark layout (written by `Dataset.to_zarr`) on a
  2-worker `LocalCluster(processes=True)`, open included, cluster start excluded.

The datasets live in `benchmarks/data/xarray/`, served by the emulator in its own
process (`benchmarks/server.py`). The table goes into the `## xarray and dask` section of
`benchmarks/README.md`, above the main suite's results marker so `python -m benchmarks`
keeps it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import server, spec
from benchmarks.server import EmulatorProcess

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA_DIR = HERE / "data" / "xarray"
LATENCY_MS = 20.0
N_VARS, LOAD_VARS = 20, 4
SHAPE = (24, 4, 64, 64)  # (time, level, y, x): 1.5 MiB float32 per variable
CHUNKS = (6, 4, 64, 64)  # 4 chunks per variable
DATASETS = {"consolidated": "ds20.zarr", "unconsolidated": "ds20-unconsolidated.zarr"}
SUM_PATH = "sharded.zarr"  # the suite's quick `sharded` layout, as one variable `v`
START, END = "<!-- xarray-bench: start -->", "<!-- xarray-bench: end -->"
RESULTS_MARKER = "<!-- results:"

# xarray's zarr engine with aiozarr's codec pipeline configured: over zarr-python's
# obstore store, and over aiozarr.zarr.Store.
PIPELINED = ["xarray-zarr-pipeline", "xarray-zarr-aiozarr-store"]
# aiozarr's engine; `aiozarr-blocking` loads with `aiozarr.xarray.load` (blocking, one plan)
AIOZARR = ("aiozarr", "aiozarr-blocking")
ENGINES = {
    "open": ["aiozarr", "xarray-zarr", "xarray-zarr-obstore", *PIPELINED, "xarray-tensorstore"],
    "load": [*AIOZARR, "xarray-zarr", "xarray-zarr-obstore", *PIPELINED, "xarray-tensorstore"],
    "dask-sum": ["aiozarr", "xarray-zarr"],
    "to_zarr": ["aiozarr", "xarray-zarr", "xarray-zarr-obstore"],
}


# -- datasets -------------------------------------------------------------------------------


def _variable_names() -> list[str]:
    return [f"var{i:02d}" for i in range(N_VARS)]


def _dataset() -> Any:
    import pandas as pd
    import xarray as xr

    rng = np.random.default_rng(0)
    dims = ("time", "level", "y", "x")
    data = {
        name: (dims, rng.random(SHAPE, dtype="f4"), {"units": "K", "index": i})
        for i, name in enumerate(_variable_names())
    }
    coords = {
        "time": pd.date_range("2020-01-01", periods=SHAPE[0], freq="h"),
        "level": np.array([1000.0, 850.0, 500.0, 250.0]),
        "y": np.linspace(-60.0, 60.0, SHAPE[2]),
        "x": np.linspace(0.0, 359.0, SHAPE[3]),
    }
    return xr.Dataset(data, coords=coords, attrs={"title": "xarray benchmark"})


def _summary(ds: Any) -> str:
    """Names, dims, shapes and dtypes of every variable, and the coordinates' values."""
    parts = [f"{k}:{v.dims}:{v.shape}:{v.dtype}" for k, v in sorted(ds.variables.items(), key=str)]
    coords = b"".join(np.ascontiguousarray(ds[c].values).tobytes() for c in sorted(ds.coords))
    return spec.checksum(np.frombuffer(("|".join(parts)).encode() + coords, dtype="u1"))


def _values_checksum(ds: Any, names: list[str]) -> str:
    return spec.checksum(np.stack([np.asarray(ds[n].values, dtype="f4") for n in names]))


def ensure_datasets(root: Path) -> dict[str, Any]:
    """Write the datasets with `Dataset.to_zarr` (zarr-python) unless they exist."""
    manifest_path = root / "manifest.json"
    if manifest_path.exists():
        return json.loads(manifest_path.read_text())  # type: ignore[no-any-return]
    import xarray as xr
    import zarr
    from zarr.codecs import ZstdCodec

    root.mkdir(parents=True, exist_ok=True)
    ds = _dataset()
    encoding = {n: {"chunks": CHUNKS} for n in _variable_names()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # consolidated metadata is not in the v3 spec yet
        for consolidated, path in zip((True, False), DATASETS.values(), strict=True):
            ds.to_zarr(
                root / path,
                mode="w",
                zarr_format=3,
                consolidated=consolidated,
                encoding=encoding,
            )
        mode = spec.MODES["quick"]
        data = spec.generate(mode)
        big = xr.Dataset({"v": (("time", "y", "x"), data)})
        big.to_zarr(
            root / SUM_PATH,
            mode="w",
            zarr_format=3,
            consolidated=True,
            encoding={
                "v": {
                    "chunks": mode.inner_chunks,
                    "shards": mode.shards,
                    "compressors": ZstdCodec(level=0),
                }
            },
        )
    names = _variable_names()[:LOAD_VARS]
    manifest = {
        "zarr": zarr.__version__,
        "xarray": xr.__version__,
        "open": _summary(xr.open_zarr(root / DATASETS["consolidated"])),
        "load": _values_checksum(ds, names),
        "sum": float(np.sum(data, dtype=np.float64)),
        "sum_nbytes": int(data.nbytes),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


# -- one job, in a fresh process ------------------------------------------------------------


def _fsspec_options(endpoint: str) -> dict[str, Any]:
    return {"endpoint_url": endpoint, "anon": True}


def _tensorstore_kvstore(endpoint: str, url: str) -> dict[str, Any]:
    return {
        "driver": "s3",
        "bucket": spec.BUCKET,
        "path": url.removeprefix(f"s3://{spec.BUCKET}/").rstrip("/") + "/",
        "endpoint": endpoint,
        "aws_region": "us-east-1",
        "aws_credentials": {"type": "anonymous"},
    }


def _import(engine: str) -> None:
    """Import the engine's libraries before the clock starts (their import is not I/O)."""
    import xarray

    if engine in AIOZARR:
        import aiozarr.dask
        import aiozarr.xarray
    elif engine in PIPELINED:
        import zarr

        import aiozarr.zarr  # noqa: F401

        zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"})
    else:
        import zarr

        if engine == "xarray-zarr":
            import s3fs  # noqa: F401
    if engine == "xarray-tensorstore":
        import xarray_tensorstore  # noqa: F401
    # xarray loads every installed backend's entry point on the first open (kerchunk's
    # imports zarr: ~100 ms in a process that has not imported it): a per-process cost of
    # the environment, not of the engine being measured, so it is paid before the clock.
    xarray.backends.list_engines()


def _open(engine: str, job: dict[str, Any], path: str, consolidated: bool) -> Any:
    import xarray as xr

    url = f"s3://{spec.BUCKET}/{path}"
    if engine in AIOZARR:
        return xr.open_dataset(
            _round_trip_store(job, url),
            engine="aiozarr",
            consolidated=consolidated,
        )
    if engine == "xarray-zarr":
        return xr.open_zarr(
            url, storage_options=_fsspec_options(job["endpoint"]), consolidated=consolidated
        )
    if engine in ("xarray-zarr-obstore", "xarray-zarr-pipeline"):
        return xr.open_zarr(_zarr_obstore(job, path), consolidated=consolidated)
    if engine == "xarray-zarr-aiozarr-store":
        import aiozarr.zarr

        store = aiozarr.zarr.Store(url, storage_options=job["storage_options"], read_only=True)
        return xr.open_zarr(store, consolidated=consolidated)
    if engine == "xarray-tensorstore":
        import xarray_tensorstore

        # Its metadata pass is xr.open_zarr on a URL it gives no storage options to (s3fs
        # reads the AWS_* variables the parent sets for this job); TensorStore's s3 URLs
        # carry no endpoint, so its spec hook is pointed at the emulator.
        xarray_tensorstore._zarr_spec_from_path = lambda p, fmt: {
            "driver": f"zarr{fmt}",
            "kvstore": _tensorstore_kvstore(job["endpoint"], p),
        }
        return xarray_tensorstore.open_zarr(url, consolidated=consolidated)
    raise ValueError(f"unknown engine {engine!r}")


def _round_trip_store(job: dict[str, Any], url: str) -> Any:
    """aiozarr's store for `url`, counting the round trips on the critical path; the
    job keeps the last one (`job["_store"]`) to report them."""
    from aiozarr.storage.opening.url import from_url
    from aiozarr.testing.round_trips import RoundTripStore

    store = RoundTripStore(from_url(url, storage_options=job["storage_options"]))
    job["_store"] = store
    return store


def _depth(job: dict[str, Any]) -> int | None:
    """Round trips on the critical path of what aiozarr just did (None: another engine)."""
    store = job.get("_store")
    return None if store is None else int(store.depth)


def _zarr_obstore(job: dict[str, Any], path: str, read_only: bool = True) -> Any:
    """zarr-python's own obstore store (`zarr.storage.ObjectStore`) over the emulator."""
    from obstore.store import S3Store
    from zarr.storage import ObjectStore

    options = {k: v for k, v in job["storage_options"].items() if k != "client_options"}
    store = S3Store(spec.BUCKET, prefix=path, client_options={"allow_http": True}, **options)
    return ObjectStore(store, read_only=read_only)


def _to_zarr(engine: str, job: dict[str, Any], ds: Any, path: str) -> None:
    """Write the dask-backed `ds` to `path`: aiozarr's `to_zarr` or xarray's own."""
    if engine == "aiozarr":
        from aiozarr.xarray import to_zarr

        url = f"s3://{spec.BUCKET}/{path}"
        to_zarr(ds, url, mode="w", storage_options=job["storage_options"])
    elif engine == "xarray-zarr":
        url = f"s3://{spec.BUCKET}/{path}"
        ds.to_zarr(url, mode="w", zarr_format=3, storage_options=_fsspec_options(job["endpoint"]))
    else:
        ds.to_zarr(_zarr_obstore(job, path, read_only=False), mode="w", zarr_format=3)


def _load(engine: str, ds: Any, names: list[str]) -> Any:
    subset = ds[names]
    if engine == "aiozarr":
        return asyncio.run(subset.load_async())
    if engine == "aiozarr-blocking":
        import aiozarr.xarray

        return aiozarr.xarray.load(subset)
    if engine == "xarray-tensorstore":
        import xarray_tensorstore

        return xarray_tensorstore.read(subset).compute()
    return subset.load()


def _dask_sum(engine: str, job: dict[str, Any]) -> float:
    url = f"s3://{spec.BUCKET}/{SUM_PATH}"
    if engine == "aiozarr":
        import aiozarr
        from aiozarr.dask import to_dask

        arr = aiozarr.open_array(f"{url}/v", storage_options=job["storage_options"])
        blocks = to_dask(arr)
    else:
        import xarray as xr

        ds = xr.open_zarr(url, storage_options=_fsspec_options(job["endpoint"]))
        blocks = ds["v"].data
    job["_blocks"] = int(np.prod(blocks.numblocks))
    return float(blocks.sum(dtype="f8").compute())


def _timed(job: dict[str, Any], fn: Any) -> tuple[float, dict[str, Any], Any]:
    server.reset(job["endpoint"])
    t0 = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - t0
    return elapsed, server.stats(job["endpoint"]), value


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Time one repeat of one (workload, engine, dataset); check the values."""
    result: dict[str, Any] = {}
    engine, workload = job["engine"], job["workload"]
    manifest = job["manifest"]
    warnings.simplefilter("ignore")
    try:
        _import(engine)
        if workload == "open":
            consolidated = job["dataset"] == "consolidated"
            path = DATASETS[job["dataset"]]
            elapsed, stats, ds = _timed(job, lambda: _open(engine, job, path, consolidated))
            result["depth"] = _depth(job)
            ok = _summary(ds) == manifest["open"]
            # the same open again in this process: connections, threads and caches warm
            t0 = time.perf_counter()
            again = _open(engine, job, path, consolidated)
            result["second_s"] = time.perf_counter() - t0
            ok = ok and _summary(again) == manifest["open"]
        elif workload == "load":
            names = _variable_names()[:LOAD_VARS]
            ds = _open(engine, job, DATASETS["consolidated"], True)
            if job.get("_store") is not None:
                job["_store"].reset()
            elapsed, stats, loaded = _timed(job, lambda: _load(engine, ds, names))
            result["depth"] = _depth(job)
            ok = _values_checksum(loaded, names) == manifest["load"]
        elif workload == "to_zarr":
            import xarray as xr

            source = _dataset().chunk(dict(zip(("time", "level", "y", "x"), CHUNKS, strict=True)))
            target = f"written-{engine}-{os.getpid()}.zarr"
            elapsed, stats, _ = _timed(job, lambda: _to_zarr(engine, job, source, target))
            back = xr.open_zarr(DATA_DIR / target, consolidated=None)
            names = _variable_names()[:LOAD_VARS]
            ok = _values_checksum(back.load(), names) == manifest["load"]
            shutil.rmtree(DATA_DIR / target)
        elif workload == "dask-sum":
            from distributed import Client, LocalCluster

            with (
                LocalCluster(
                    n_workers=2,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    worker_dashboard_address=None,
                ) as cluster,
                Client(cluster),
            ):
                elapsed, stats, total = _timed(job, lambda: _dask_sum(engine, job))
            ok = bool(np.isclose(total, manifest["sum"], rtol=1e-9))
            result["blocks"] = job["_blocks"]
        else:
            raise ValueError(f"unknown workload {workload!r}")
        result.update(ok=ok, time_s=elapsed, stats=stats)
        if not ok:
            result["error"] = "wrong values"
    except Exception as exc:
        result.update(
            ok=False,
            error=f"{type(exc).__name__}: {exc}"[:300],
            traceback=traceback.format_exc()[-1500:],
        )
    return result


# -- the suite ------------------------------------------------------------------------------


def _child_env(engine: str, endpoint: str) -> dict[str, str]:
    env = dict(os.environ)
    if engine == "xarray-tensorstore":
        env.update(
            AWS_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID="anonymous",
            AWS_SECRET_ACCESS_KEY="anonymous",
            AWS_REGION="us-east-1",
            AWS_DEFAULT_REGION="us-east-1",
        )
    return env


def _run_child(job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.xarray_bench", "--job"],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=timeout_s,
            env=_child_env(job["engine"], job["endpoint"]),
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        detail = (done.stderr or "no output").strip()[-300:]
        return {"ok": False, "error": f"exit status {done.returncode}: {detail}"}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def _has_tensorstore() -> bool:
    try:
        import xarray_tensorstore  # noqa: F401
    except ImportError:
        return False
    return True


ROWS = [
    ("open", "consolidated"),
    ("open", "unconsolidated"),
    ("load", "consolidated"),
    ("dask-sum", "sharded"),
    ("to_zarr", "dask"),
]


def run_suite(
    repeats: int,
    timeout_s: float,
    workloads: Sequence[str] | None = None,
    engines: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every row of `ROWS` (or those of `workloads`), each engine (or those of `engines`)."""
    manifest = ensure_datasets(DATA_DIR)
    rows: list[dict[str, Any]] = []
    with EmulatorProcess(DATA_DIR) as emu:
        emu.set_latency(LATENCY_MS)
        for workload, dataset in ROWS:
            if workloads and workload not in workloads:
                continue
            for engine in ENGINES[workload]:
                if engines and engine not in engines:
                    continue
                if engine == "xarray-tensorstore" and not _has_tensorstore():
                    rows.append(
                        {"workload": workload, "dataset": dataset, "engine": engine,
                         "ok": False, "error": "xarray-tensorstore not installed"}
                    )  # fmt: skip
                    continue
                job = {
                    "engine": engine,
                    "workload": workload,
                    "dataset": dataset,
                    "endpoint": emu.endpoint,
                    "storage_options": emu.storage_options(),
                    "manifest": manifest,
                }
                runs = [_run_child(job, timeout_s) for _ in range(repeats)]
                row = {"workload": workload, "dataset": dataset, "engine": engine}
                failed = [r for r in runs if not r.get("ok")]
                if failed:
                    row.update(ok=False, error=failed[0].get("error", "?"))
                else:
                    times = [r["time_s"] for r in runs]
                    row.update(
                        ok=True,
                        median_s=statistics.median(times),
                        times=times,
                        requests=runs[-1]["stats"].get("requests"),
                        peak_inflight=runs[-1]["stats"].get("peak_inflight"),
                        blocks=runs[-1].get("blocks"),
                        depth=runs[-1].get("depth"),
                        second_s=(
                            statistics.median(r["second_s"] for r in runs)
                            if "second_s" in runs[0]
                            else None
                        ),
                    )
                rows.append(row)
                shown = f"{row['median_s']:.3f} s" if row.get("ok") else row["error"][:120]
                print(f"{workload:<9} {dataset:<15} {engine:<19} {shown}", flush=True)
    return {"manifest": manifest, "repeats": repeats, "latency_ms": LATENCY_MS, "rows": rows}


# -- report ---------------------------------------------------------------------------------


def _fmt_time(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("aiozarr", "xarray", "zarr", "s3fs", "dask", "distributed", "xarray-tensorstore"):
        with contextlib.suppress(PackageNotFoundError):
            found.append(f"{name} {version(name)}")
    return ", ".join(found)


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    )
    return done.stdout.strip() or "unknown"


def render(document: dict[str, Any]) -> str:
    """The `## xarray and dask` section (markdown)."""
    rows = document["rows"]
    base = {
        (r["workload"], r["dataset"]): r["median_s"]
        for r in rows
        if r["engine"] == "aiozarr" and r.get("ok")
    }
    lines = [
        START,
        "## xarray and dask",
        "",
        "`python -m benchmarks.xarray_bench` (about 2 minutes): aiozarr's xarray engine and",
        "`aiozarr.dask` against xarray's zarr engine (zarr-python through s3fs,",
        '`storage_options={"endpoint_url": ..., "anon": True}`, `xr.open_zarr` defaults) and',
        "xarray-tensorstore, through the emulator (own process) at "
        f"{document['latency_ms']:g} ms latency.",
        "Datasets written by `Dataset.to_zarr` with zarr-python (v3): 20 float32 variables",
        f"`(time, level, y, x)` = {SHAPE}, chunks {CHUNKS}, coordinates time (CF), level, y, x;",
        "and the suite's 64 MiB `sharded` layout (32 MiB shards of 256 KiB chunks, zstd) as",
        "variable `v`. `open`: open the dataset (consolidated or not); `load`: 4 variables of",
        "an opened dataset (`load_async` for aiozarr, `aiozarr.xarray.load(ds)` for",
        "aiozarr-blocking, `.load()` for xarray's engine, `read()`",
        "for xarray-tensorstore); `to_zarr`: write the 20 variables, dask-backed in the",
        "chunks above, as a new v3 store (aiozarr's `to_zarr` / `Dataset.to_zarr`);",
        "`xarray-zarr-obstore` is xarray's zarr engine over zarr's own obstore store",
        "(`zarr.storage.ObjectStore`), `xarray-zarr-pipeline` the same with",
        "`aiozarr.zarr.CodecPipeline` configured, `xarray-zarr-aiozarr-store` that over",
        "`aiozarr.zarr.Store`; `dask-sum`: open and sum `v` on a 2-worker",
        "`LocalCluster(processes=True)` (cluster start not timed; aiozarr: `to_dask`, one task",
        "per shard; xarray: `xr.open_zarr(...)['v'].sum().compute()`, its default chunks).",
        "Each engine's libraries and xarray's backend discovery (which imports every installed",
        "backend: kerchunk's imports zarr) are loaded before the clock starts.",
        f"Median of {document['repeats']} repeats, each in a fresh process; every result is",
        "checked (variables, shapes, coordinate values; loaded values; the sum). The last",
        "column times a second open of the same dataset in the same process (connections,",
        "threads and caches warm): the round trips themselves, without the cold start.",
        "`round trips (counted)`: aiozarr's round trips on the critical path, counted by a",
        "`RoundTripStore` around its store (requests sent together count once); the time",
        "column divided by the latency adds the client's and the emulator's own work.",
        "",
        f"- commit measured: `{_commit()}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- machine: {os.cpu_count()} cores, shared by the emulator, the client and the workers",
        f"- versions: {_versions()}",
        "- aiozarr speedup = other engine's time / aiozarr's (above 1: aiozarr is faster);"
        " targets (issue 17): open >= 3x, load >= 2x and to_zarr >= 2x xarray-zarr-obstore",
        "",
        "| workload | dataset | engine | median time | round trips (time / latency) "
        "| round trips (counted) | requests | peak in-flight | dask blocks | aiozarr speedup "
        "| 2nd open in the process | check |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        head = f"| {r['workload']} | {r['dataset']} | {r['engine']} "
        if not r.get("ok"):
            error = str(r.get("error", "?")).replace("|", "/").replace("\n", " ")[:160]
            lines.append(head + f"| | | | | | | | | {error} |")
            continue
        ref = base.get((r["workload"], r["dataset"]))
        ratio = "" if r["engine"] == "aiozarr" or ref is None else f"{r['median_s'] / ref:.2f}x"
        trips = r["median_s"] * 1000 / document["latency_ms"]
        second = "" if r.get("second_s") is None else _fmt_time(r["second_s"])
        counted = "" if r.get("depth") is None else r["depth"]
        lines.append(
            head + f"| {_fmt_time(r['median_s'])} | {trips:.1f} | {counted} "
            f"| {r.get('requests', '')} | {r.get('peak_inflight', '')} | {r.get('blocks') or ''} "
            f"| {ratio} | {second} | ok |"
        )
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write_readme(section: str, readme: Path) -> None:
    """Put `section` between its markers, or just above the main suite's results marker
    (which `python -m benchmarks` rewrites below), or at the end."""
    text = readme.read_text()
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        text = before + section + ("\n" + after if after else "")
    elif RESULTS_MARKER in text:
        before, after = text.split(RESULTS_MARKER, 1)
        text = before + section + "\n" + RESULTS_MARKER + after
    else:
        text = text.rstrip("\n") + "\n\n" + section
    readme.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.xarray_bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per repeat")
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument(
        "--workloads", help="comma-separated: open,load,dask-sum,to_zarr (implies --no-readme)"
    )
    parser.add_argument("--engines", help="comma-separated engines (implies --no-readme)")
    parser.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.job:
        print(json.dumps(run_job(json.load(sys.stdin))))
        return 0
    workloads = args.workloads.split(",") if args.workloads else None
    engines = args.engines.split(",") if args.engines else None
    document = run_suite(args.repeats, args.timeout, workloads, engines)
    out = HERE / "data" / "results-xarray.json"
    out.write_text(json.dumps(document, indent=1))
    print(f"results: {out}")
    if not (args.no_readme or workloads or engines):
        write_readme(render(document), HERE / "README.md")
        print(f"section written: {HERE / 'README.md'}")
    required = [r for r in document["rows"] if r["engine"] != "xarray-tensorstore"]
    return 0 if all(r.get("ok") for r in required) else 1


if __name__ == "__main__":
    sys.exit(main())
