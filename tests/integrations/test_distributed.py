"""aiozarr on a dask.distributed LocalCluster with worker processes, reading and writing
the emulator (served from this process on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import aiozarr  # noqa: E402
from aiozarr.dask import store, to_dask  # noqa: E402
from aiozarr.emulator import Emulator  # noqa: E402
from aiozarr.errors import CodecError  # noqa: E402

DATA = np.arange(200 * 60, dtype="i8").reshape(200, 60)
WORKERS = 4  # the aligned multi-worker write; the whole module takes ~5 s on 2 cores


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(
            n_workers=WORKERS,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_read_reduce_write_on_worker_processes(
    client: distributed.Client, emulator: Emulator
) -> None:
    options = emulator.storage_options()
    source = aiozarr.create_array(
        emulator.s3_url("dist/in.zarr"),
        shape=DATA.shape,
        dtype="i8",
        chunks=(10, 30),
        shards=(50, 60),
        storage_options=options,
    )
    source[...] = DATA
    blocks = to_dask(source)
    assert blocks.numblocks == (4, 1)
    # a reduction computed by the worker processes
    assert int(blocks.sum().compute()) == int(DATA.sum())
    pids = set(client.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == WORKERS
    # a derived array written back by the 4 worker processes, one shard per task
    target = aiozarr.create_array(
        emulator.s3_url("dist/out.zarr"),
        shape=DATA.shape,
        dtype="i8",
        chunks=(10, 30),
        shards=(50, 60),
        storage_options=options,
    )
    emulator.reset_stats()
    store(blocks * 2 + 1, target)
    assert emulator.stats()["by_kind"].get("put", 0) == 4  # one PUT per shard
    np.testing.assert_array_equal(target[...], DATA * 2 + 1)


def test_an_error_of_several_chunks_reaches_the_client_as_itself(
    client: distributed.Client, tmp_path: Path
) -> None:
    # A task reading several corrupt chunks raised the first with the task group as its
    # context, the group holding it: the worker could not pickle that cycle (tblib) and
    # the client got a bare `Exception` with the error's repr as its message.
    array = aiozarr.create_array(tmp_path / "bad.zarr", shape=(40, 30), dtype="i4", chunks=(5, 10))
    array[...] = 1
    for chunk in (tmp_path / "bad.zarr" / "c").rglob("*"):
        if chunk.is_file():
            chunk.write_bytes(b"not zstd")
    with pytest.raises(CodecError, match=r"chunk 'c/\d+/\d+'.*corrupt") as raised:
        to_dask(array, chunks=(40, 30)).sum().compute()
    assert raised.value.__context__ is None
