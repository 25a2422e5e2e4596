"""`transpose` before `sharding_indexed`, as zarr-python 3.4 and zarrs write it: read and write.

`data/transpose_sharding.zarr` holds a 3-D and a 2-D array from each writer
(make_transpose_sharding_fixture.py), and the values zarr-python read back.
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore as ts
import zarr

import aiozarr
from aiozarr.storage import CountingStore, LocalStore

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "transpose_sharding.zarr"
EXPECTED = json.loads((DATA / "transpose_sharding.expected.json").read_text())["arrays"]


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():  # zarr-python: "sharding disables partial reads"
        warnings.simplefilter("ignore", category=UserWarning)
        yield


def _expected(path: str) -> np.ndarray:
    item = EXPECTED[path]
    values = [np.nan if v is None else v for v in item["values"]]
    return np.array(values, dtype=item["dtype"]).reshape(item["shape"])


def _bits(values: Any) -> bytes:
    return np.ascontiguousarray(values).tobytes()


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_read(path: str) -> None:
    arr = aiozarr.open_array(FIXTURE, path, mode="r")
    expected = _expected(path)
    assert arr.dtype == expected.dtype
    assert _bits(arr[...]) == _bits(expected)
    # Inner chunks on the array's axes: the stored (2, 2, 4) of axes (1, 2, 0) is (4, 2, 2).
    assert arr.chunks == {"cube": (4, 2, 2), "plane": (2, 4)}[path.split("/")[1]]
    selections = [
        tuple(slice(1, n - 2) for n in expected.shape),
        (3, *[slice(None)] * (expected.ndim - 2), 5),
        (slice(None, None, 3),),
    ]
    for sel in selections:
        assert _bits(arr[sel]) == _bits(expected[sel]), sel


def test_partial_read_fetches_only_the_inner_chunks_it_needs() -> None:
    store = CountingStore(LocalStore(FIXTURE))
    arr = aiozarr.open_array(store, "zarr_python/cube", mode="r")
    store.reset()
    assert arr[0, 0, 0] == 0
    assert store.counts["get"] == 2  # the shard index, then the one inner chunk


@pytest.mark.parametrize("writer", ["zarr_python", "zarrs"])
def test_write_reads_back_in_zarr_python_and_tensorstore(tmp_path: Path, writer: str) -> None:
    root = tmp_path / "t.zarr"
    shutil.copytree(FIXTURE, root)
    for name in ("cube", "plane"):
        expected = _expected(f"{writer}/{name}").copy()
        arr = aiozarr.open_array(root, f"{writer}/{name}", mode="r+")
        region = tuple(slice(1, n - 1) for n in expected.shape)
        update = np.arange(expected[region].size).reshape(expected[region].shape) * 3 + 1
        expected[region] = update
        arr[region] = update
        assert _bits(arr[...]) == _bits(expected)
        path = root / writer / name
        assert _bits(zarr.open_array(path, mode="r")[...]) == _bits(expected)
        spec = {"driver": "zarr3", "kvstore": f"file://{path}"}
        assert _bits(ts.open(spec).result().read().result()) == _bits(expected)


def test_aiozarr_writes_the_bytes_zarr_python_writes(tmp_path: Path) -> None:
    # Same metadata, same values: the same shards, index order and Morton order included.
    source = FIXTURE / "zarr_python" / "cube"
    doc = json.loads((source / "zarr.json").read_text())
    arr = aiozarr.create_array(
        tmp_path / "cube",
        shape=doc["shape"],
        chunks=doc["chunk_grid"]["configuration"]["chunk_shape"],
        dtype="int32",
        fill_value=-1,
        filters=[doc["codecs"][0]],
        serializer=doc["codecs"][1],
        compressors=None,
    )
    assert json.loads((tmp_path / "cube" / "zarr.json").read_text())["codecs"] == doc["codecs"]
    arr[:6] = np.arange(6 * 11 * 13, dtype="int32").reshape(6, 11, 13)
    for shard in sorted((source / "c").rglob("*")):
        if shard.is_file():
            written = tmp_path / "cube" / shard.relative_to(source)
            assert written.read_bytes() == shard.read_bytes(), shard.relative_to(source)
