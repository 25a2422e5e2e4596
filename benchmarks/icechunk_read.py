"""`python -m benchmarks.icechunk_read`: icechunk repositories read by aiozarr and by
icechunk + zarr-python, in one interpreter, against the emulator's network shaping.

Needs icechunk, zarr-python and aiozarr in one environment (the Python 3.12 venv:
icechunk 2.x, zarr 3.4). The emulator runs in its own process; every engine reads the
same files through it, the rows of one profile one after the other, repeated and
interleaved, so the ratios compare runs made under the same load; each profile in a
fresh interpreter (`fresh.py`). The workloads:

- tile: a 5 x 5-chunk tile of a virtual array whose source files each hold one row of
  chunks, contiguous, so the tile's 25 chunks lie in 5 runs of 5 in 5 files; read
  with the manifest already read (the array opened, one element read);
- open: open the repository's `main` branch and read the array's first chunk, nothing
  kept from before (ref -> snapshot -> manifest -> chunk);
- sharded: open and read whole a native sharded array in the repository; aiozarr also
  reads the same array written as plain Zarr;
- random: 20 single elements of the virtual array, one read each, manifest read.

    python -m benchmarks.icechunk_read --profiles 20ms cloud --repeats 5
    python -m benchmarks.icechunk_read --workloads sharded --repeats 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import spec
from benchmarks.fresh import in_fresh_process
from benchmarks.server import EmulatorProcess

CHUNK = (256, 256)  # float32: 256 KiB, stored raw in the source files
FILES, PER_FILE = 10, 10  # file n holds chunk row n, its 10 chunks one after another
TILE = (slice(2 * 256, 7 * 256), slice(3 * 256, 8 * 256))  # chunk rows 2-6, columns 3-7
SHARDED = ((64, 512, 512), (1, 256, 256), (32, 512, 512))  # 64 MiB, zstd; 2 shards
RANDOM_READS = 20


def _write_sources(root: Path) -> np.ndarray:
    rng = np.random.default_rng(7)
    values = rng.normal(size=(FILES * CHUNK[0], PER_FILE * CHUNK[1])).astype("f4")
    (root / "sources").mkdir()
    for n in range(FILES):
        row = values[n * CHUNK[0] : (n + 1) * CHUNK[0]]
        chunks = [row[:, j * CHUNK[1] : (j + 1) * CHUNK[1]] for j in range(PER_FILE)]
        (root / "sources" / f"part{n}.bin").write_bytes(b"".join(c.tobytes() for c in chunks))
    return values


def _icechunk_config(endpoint: str) -> Any:
    import icechunk

    config = icechunk.RepositoryConfig.default()
    store = icechunk.s3_store(
        region="us-east-1",
        endpoint_url=endpoint,
        allow_http=True,
        s3_compatible=True,
        force_path_style=True,
    )
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(f"s3://{spec.BUCKET}/sources/", store)
    )
    return config


def _open_icechunk(endpoint: str) -> Any:
    """icechunk's repository on the emulator, its virtual chunks authorized."""
    import icechunk

    storage = icechunk.s3_storage(
        bucket=spec.BUCKET,
        prefix="repo",
        region="us-east-1",
        endpoint_url=endpoint,
        allow_http=True,
        anonymous=True,
        force_path_style=True,
    )
    return icechunk.Repository.open(
        storage,
        config=_icechunk_config(endpoint),
        authorize_virtual_chunk_access=icechunk.containers_credentials(
            {f"s3://{spec.BUCKET}/sources/": icechunk.s3_anonymous_credentials()}
        ),
    )


def write(root: Path, endpoint: str) -> dict[str, np.ndarray]:
    """The repository (`repo`: `virtual` and `sharded`) and `plain.zarr` (`sharded`
    as plain Zarr), written with icechunk and zarr-python into the emulator's bucket."""
    import icechunk
    import zarr

    virtual = _write_sources(root)
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(root / "repo")), config=_icechunk_config(endpoint)
    )
    session = repo.writable_session("main")
    group = zarr.group(store=session.store)
    arr = group.create_array(
        "virtual", shape=virtual.shape, chunks=CHUNK, dtype="f4", compressors=None, fill_value=0
    )
    nbytes = CHUNK[0] * CHUNK[1] * 4
    specs = [
        icechunk.VirtualChunkSpec(
            index=[n, j],
            location=f"s3://{spec.BUCKET}/sources/part{n}.bin",
            offset=j * nbytes,
            length=nbytes,
        )
        for n in range(FILES)
        for j in range(PER_FILE)
    ]
    session.store.set_virtual_refs(arr.path, specs, validate_containers=False)
    shape, chunks, shards = SHARDED
    sharded = spec.generate(spec.MODES["quick"], shape)
    for store in (session.store, zarr.storage.LocalStore(root / "plain.zarr")):
        target = zarr.create_array(
            store, name="sharded", shape=shape, chunks=chunks, shards=shards, dtype="f4"
        )
        target[...] = sharded
    session.commit("benchmark data")
    return {"virtual": virtual, "sharded": sharded}


class Engines:
    """Each engine's way to open an array, nothing kept from an earlier open."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.options = {**spec.storage_options(endpoint), "branch": "main"}

    def aiozarr(self, path: str) -> Any:
        import aiozarr
        from aiozarr.storage.references.icechunk.kept import kept_files

        kept_files().clear()
        return aiozarr.open_array(
            f"s3://{spec.BUCKET}/repo", path, mode="r", storage_options=self.options
        )

    def aiozarr_plain(self, path: str) -> Any:
        import aiozarr

        options = spec.storage_options(self.endpoint)
        return aiozarr.open_array(
            f"s3://{spec.BUCKET}/plain.zarr", path, mode="r", storage_options=options
        )

    def icechunk(self, path: str) -> Any:
        import zarr

        session = _open_icechunk(self.endpoint).readonly_session("main")
        return zarr.open_array(session.store, path=path, mode="r")


def _timed(emu: EmulatorProcess, job: Callable[[], Any]) -> tuple[float, dict[str, Any]]:
    emu.reset()
    start = time.perf_counter()
    job()
    seconds = time.perf_counter() - start
    stats = emu.stats()
    return seconds, {"gets": stats["by_method"].get("GET", 0), "bytes": stats["bytes_read"]}


def _jobs(engines: Engines, expected: dict[str, np.ndarray]) -> dict[str, Any]:
    """workload -> {engine: (prepare, job)}: `prepare()` returns what `job` takes."""
    rng = np.random.default_rng(3)
    points = [tuple(int(v) for v in rng.integers(0, n, RANDOM_READS)) for n in (2560, 2560)]
    points = list(zip(*points, strict=True))
    tile = expected["virtual"][TILE]
    full = expected["sharded"]

    def warm(open_: Callable[[str], Any]) -> Callable[[], Any]:
        def prepare() -> Any:
            arr = open_("virtual")
            arr[0, 0]  # the manifest read
            return arr

        return prepare

    def check(got: Any, want: np.ndarray) -> None:
        np.testing.assert_array_equal(np.asarray(got), want)

    def first_chunk(open_: Callable[[str], Any]) -> Callable[[Any], Any]:
        return lambda _: check(open_("virtual")[:256, :256], expected["virtual"][:256, :256])

    def random(arr: Any) -> None:
        for i, j in points:
            check(arr[i, j], expected["virtual"][i, j])

    pairs = {"aiozarr": engines.aiozarr, "icechunk+zarr": engines.icechunk}
    jobs: dict[str, Any] = {
        "tile": {k: (warm(o), lambda arr: check(arr[TILE], tile)) for k, o in pairs.items()},
        "open": {k: (lambda: None, first_chunk(o)) for k, o in pairs.items()},
        "sharded": {
            k: (lambda: None, lambda _, o=o: check(o("sharded")[...], full))
            for k, o in {**pairs, "aiozarr plain Zarr": engines.aiozarr_plain}.items()
        },
        "random": {k: (warm(o), random) for k, o in pairs.items()},
    }
    return jobs


def run(profiles: list[str], repeats: int, workloads: list[str]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder, EmulatorProcess(Path(folder)) as emu:
        expected = write(Path(folder), emu.endpoint)
        for profile in profiles:
            emu.set_profile(spec.PROFILES[profile])
            job = (emu.endpoint, emu.controls, expected, profile, repeats, workloads)
            rows += in_fresh_process(_profile_rows, *job)  # not the last profile's link
    return rows


def _profile_rows(
    endpoint: str,
    controls: list[str],
    expected: dict[str, np.ndarray],
    profile: str,
    repeats: int,
    workloads: list[str],
) -> list[dict[str, Any]]:
    """Every engine's rows of `workloads` on the emulator at `endpoint`, now serving
    `profile`."""
    emu = EmulatorProcess.attach(endpoint, controls)
    jobs = {k: v for k, v in _jobs(Engines(endpoint), expected).items() if k in workloads}
    rows = []
    for workload, by_engine in jobs.items():
        times: dict[str, list[float]] = {k: [] for k in by_engine}
        counts: dict[str, dict[str, Any]] = {}
        for _ in range(repeats):  # interleaved: each repeat runs every engine
            for engine, (prepare, job) in by_engine.items():
                ready = prepare()
                seconds, counts[engine] = _timed(emu, lambda j=job, r=ready: j(r))
                times[engine].append(seconds)
        for engine, seconds in times.items():
            rows.append(
                {
                    "profile": profile,
                    "workload": workload,
                    "engine": engine,
                    "median_s": statistics.median(seconds),
                    "min_s": min(seconds),
                    **counts[engine],
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.icechunk_read")
    parser.add_argument("--profiles", nargs="+", default=["20ms", "cloud"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workloads", nargs="+", default=["tile", "open", "sharded", "random"])
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = run(args.profiles, args.repeats, args.workloads)
    print(f"load average (1 min): {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    print("| profile | workload | engine | median | best | GETs | read | aiozarr's speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        base = next(
            r
            for r in rows
            if r["profile"] == row["profile"]
            and r["workload"] == row["workload"]
            and r["engine"] == "aiozarr"
        )
        ratio = row["median_s"] / base["median_s"]
        print(
            f"| {row['profile']} | {row['workload']} | {row['engine']} | "
            f"{row['median_s'] * 1e3:.0f} ms | {row['min_s'] * 1e3:.0f} ms | {row['gets']} | "
            f"{row['bytes'] / 2**20:.2f} MiB | {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
