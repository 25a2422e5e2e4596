"""Parquet references (kerchunk) are sized by what is stored, not by what they declare.

- `record_size: 0` (or negative, or not an integer) in `.zmetadata` is a `MetadataError`
  naming it (a `ZeroDivisionError` on the first chunk read before).
- A `.zmetadata` declaring 10**9 chunks of which two are stored lists those two: the
  keys come from the record files there are (a listing, or a batch of records at a time
  where the store cannot list), never from every chunk of the declared grid (which
  built 10**9 keys in memory). That part runs in a child process with 1 GiB of heap, so
  a regression fails the test instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import MetadataError
from aiozarr.storage.references import ReferenceStore

pytest.importorskip("pyarrow")
import pyarrow as pa
import pyarrow.parquet as pq

SRC = str(Path(aiozarr.__file__).resolve().parents[1])
CHILD_HEAP = 1 << 30


def _references(root: Path, *, record_size: Any, chunks: int) -> Path:
    """A Parquet reference directory: array `x` of `chunks` one-byte chunks, record 0
    holding chunks 0 and 1 inline (the rest of the grid stored nowhere)."""
    zarray = {
        "zarr_format": 2,
        "shape": [chunks],
        "chunks": [1],
        "dtype": "|u1",
        "compressor": None,
        "fill_value": 0,
        "filters": None,
        "order": "C",
    }
    metadata = {".zgroup": {"zarr_format": 2}, "x/.zarray": zarray}
    (root / "x").mkdir(parents=True)
    (root / ".zmetadata").write_text(json.dumps({"record_size": record_size, "metadata": metadata}))
    table = pa.table(
        {"path": [None, None], "offset": [0, 0], "size": [0, 0], "raw": [b"\5", b"\6"]}
    )
    pq.write_table(table, root / "x" / "refs.0.parq")
    return root


@pytest.mark.parametrize("record_size", [0, -5, 1.5, "100", True, None])
async def test_a_record_size_that_is_not_a_positive_integer_is_refused(
    tmp_path: Path, record_size: Any
) -> None:
    store = ReferenceStore(_references(tmp_path / "refs.parq", record_size=record_size, chunks=4))
    with pytest.raises(MetadataError, match="record_size must be a positive integer"):
        await store.get("x/1")


LIST_KEYS = r"""
import asyncio, json, resource, sys
resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv[2]), int(sys.argv[2])))
from aiozarr.storage.references import ReferenceStore

async def main():
    store = ReferenceStore(sys.argv[1])
    print(json.dumps([key async for key in store.list_prefix("x/")]))
    print(bytes(await store.get("x/1")).hex(), await store.get("x/999999999"))

asyncio.run(main())
"""


def test_a_declared_billion_chunks_list_as_the_two_stored(tmp_path: Path) -> None:
    root = _references(tmp_path / "refs.parq", record_size=100_000, chunks=10**9)
    child = subprocess.run(
        [sys.executable, "-c", LIST_KEYS, str(root), str(CHILD_HEAP)],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    keys, values = child.stdout.splitlines()
    assert json.loads(keys) == ["x/.zarray", "x/0", "x/1"]
    assert values == "06 None"


async def test_a_store_that_cannot_list_reads_the_records_the_grid_can_have(
    emulator: Emulator,
) -> None:
    prefix = f"parquet-{os.getpid()}"
    _references(emulator.root / prefix / "refs.parq", record_size=1000, chunks=10_000)
    store = ReferenceStore(emulator.http_url(f"{prefix}/refs.parq"))
    emulator.reset_stats()
    assert [key async for key in store.list_prefix("x/")] == ["x/.zarray", "x/0", "x/1"]
    assert emulator.stats()["by_method"] == {"GET": 1 + 10}  # .zmetadata, 10 records
