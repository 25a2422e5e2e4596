"""aiozarr on a dask.distributed cluster of worker processes, with no cloud account.

Starts the object-store emulator on 127.0.0.1 (20 ms per request) and a 2-process
`LocalCluster`, writes a sharded array, sums it on the workers (one task per shard),
writes a derived array back from the workers, and verifies it.

Needs the `dask` extra: `pip install -e ".[dask]"` in a checkout of aiozarr (it is not
on the package index yet; `pip wheel --no-deps .` builds a wheel to install elsewhere).

    python examples/dask_distributed.py [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import dask
import numpy as np
from distributed import Client, LocalCluster

import aiozarr
from aiozarr.dask import store, to_dask
from aiozarr.emulator import Emulator


def main(latency_ms: float) -> None:
    data = np.random.default_rng(0).random((2000, 1000)).astype("f4")
    with (
        tempfile.TemporaryDirectory(prefix="aiozarr-") as root,
        Emulator(f"{root}/data", latency_ms=latency_ms).running_in_thread() as emu,
        # dask's scratch space goes away with the data
        dask.config.set({"temporary-directory": f"{root}/dask"}),
        LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        Client(cluster),
    ):
        options = emu.storage_options()
        source = aiozarr.create_array(
            emu.s3_url("in.zarr"),
            shape=data.shape,
            dtype="f4",
            chunks=(100, 250),
            shards=(500, 1000),
            storage_options=options,
        )
        source[...] = data

        darr = to_dask(source)  # one block per shard: each task reads one shard
        start = time.perf_counter()
        total = float(darr.sum(dtype="f8").compute())
        print(
            f"sum on {len(cluster.workers)} worker processes: {total:.3f} "
            f"({darr.npartitions} tasks, {(time.perf_counter() - start) * 1e3:.0f} ms)"
        )
        assert np.isclose(total, data.sum(dtype="f8"))

        target = aiozarr.create_array(
            emu.s3_url("out.zarr"),
            shape=data.shape,
            dtype="f4",
            chunks=(100, 250),
            shards=(500, 1000),
            storage_options=options,
        )
        store(np.sqrt(darr) + 1, target)  # refused if two tasks shared a shard
        assert np.array_equal(target[...], np.sqrt(data) + 1)
        print("derived array written by the workers: verified")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    main(parser.parse_args().latency_ms)
