"""`aiozarr.xarray.to_zarr` of a dask dataset larger than the memory bound writes it block
by block: each process grows by at most 2 blocks per thread + 128 MiB, with dask's
threads and on a `LocalCluster(processes=True)`. Each run is its own process, so its
peak (`VmHWM`) is this write's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xarray")
pytest.importorskip("distributed")

MiB = 2**20
SLACK = 128 * MiB

SCRIPT = r"""
import json, os, sys
import numpy as np
import dask
import dask.array as da
import xarray as xr
from aiozarr.xarray import to_zarr

args = json.loads(sys.argv[1])
MiB = 2**20
WIDTH = 1024


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak():
    # VmHWM, not ru_maxrss: ru_maxrss keeps the forking parent's peak across exec
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def block(offset, block_info=None):
    (r0, r1), _ = block_info[None]["array-location"]
    rows = np.arange(r0 * WIDTH, r1 * WIDTH, dtype="f8").reshape(r1 - r0, WIDTH)
    return (rows % 1000) * 0.5 + offset


rows = args["block_mib"] * MiB // (8 * WIDTH)
n_rows = args["var_mib"] * MiB // (8 * WIDTH)
chunks = ((rows,) * (n_rows // rows), (WIDTH,))
ds = xr.Dataset(
    {
        f"v{i}": (("y", "x"), da.map_blocks(block, float(i), chunks=chunks, dtype="f8"))
        for i in range(args["variables"])
    },
    coords={"y": np.arange(n_rows), "x": np.arange(WIDTH)},
)
result = {"nbytes": int(ds.nbytes), "block": rows * WIDTH * 8}
if args["cluster"]:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=args["workers"], threads_per_worker=1, processes=True,
        dashboard_address=None, worker_dashboard_address=None,
    )
    client = Client(cluster)
    client.run(lambda: __import__("aiozarr.xarray") and None)  # libraries are not the write's
    before = client.run(rss)
    here = rss()
    to_zarr(ds, args["path"], mode="w")
    after = client.run(peak)
    result["workers"] = [after[w] - before[w] for w in before]
    result["client"] = peak() - here
    client.close()
    cluster.close()
else:
    with dask.config.set(scheduler="threads", num_workers=args["workers"]):
        here = rss()
        to_zarr(ds, args["path"], mode="w")
        result["process"] = peak() - here
written = xr.open_zarr(args["path"], consolidated=True)
expected = ds.sum().compute()
got = written.sum().compute()
result["equal"] = all(float(got[v]) == float(expected[v]) for v in ds.data_vars)
print(json.dumps(result))
"""


def run(tmp_path: Path, **args: object) -> dict[str, object]:
    args["path"] = str(tmp_path / "big.zarr")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def check(result: dict[str, object], threads: int) -> None:
    block = int(result["block"])  # type: ignore[call-overload]
    bound = 2 * block * threads + SLACK
    assert int(result["nbytes"]) > bound, "the dataset must be larger than the bound"  # type: ignore[call-overload]
    assert result["equal"]
    grown = result.get("workers") or [result["process"]]
    for growth in grown:  # type: ignore[union-attr]
        assert growth <= bound, (
            f"grew {growth / MiB:.0f} MiB, bound {bound / MiB:.0f} MiB: {result}"
        )
    if "client" in result:
        assert int(result["client"]) <= SLACK  # type: ignore[call-overload]


def test_dask_dataset_written_with_dask_threads_in_bounded_memory(tmp_path: Path) -> None:
    # 2 variables of 160 MiB in 16 MiB blocks: bound 2 x 2 x 16 + 128 = 192 MiB
    result = run(tmp_path, variables=2, var_mib=160, block_mib=16, workers=2, cluster=False)
    check(result, threads=2)


def test_dask_dataset_written_by_worker_processes_in_bounded_memory(tmp_path: Path) -> None:
    # each worker (one thread) may grow by 2 x 16 + 128 = 160 MiB; the dataset is 480 MiB,
    # so each of the 2 workers writes more than its bound (~240 MiB): it cannot keep them
    result = run(tmp_path, variables=3, var_mib=160, block_mib=16, workers=2, cluster=True)
    check(result, threads=1)
    assert int(result["nbytes"]) / 2 > 2 * 16 * MiB + SLACK  # type: ignore[call-overload]


@pytest.mark.slow
@pytest.mark.parametrize("cluster", [False, True])
def test_800_mb_in_40_mb_blocks(tmp_path: Path, cluster: bool) -> None:
    result = run(tmp_path, variables=4, var_mib=200, block_mib=40, workers=2, cluster=cluster)
    check(result, threads=1 if cluster else 2)
