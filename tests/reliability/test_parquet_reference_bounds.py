"""Parquet references (kerchunk) are sized by what is stored, not by what they declare.

- `record_size: 0` (or negative, or not an integer) in `.zmetadata` is a `MetadataError`
  naming it (a `ZeroDivisionError` on the first chunk read before).
- A `.zmetadata` declaring 10**9 chunks of which two are stored lists those two: the
  keys come from the record files there are (a listing, or a batch of records at a time
  where the store cannot list), never from every chunk of the declared grid (which
  built 10**9 keys in memory). That part runs in a child process with 1 GiB of heap, so
  a regression fails the test instead of taking the machine's memory.
- A record file holding 5,000,000 rows where `record_size` is 10 (about 100 KB of
  zstd) is a `MetadataError` naming the file and both numbers, from its footer, before
  a row is read (it took over 1 GB to open before); checked in the same capped child.
- A store that cannot list is listed by reading every record the grid can have, at
  most `ParquetRefs._MAX_UNLISTED_RECORDS`: a grid of 10**9 records is refused before
  any record is requested (it requested every one before).
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
from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.storage.references.reference_store import ReferenceStore

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
import asyncio, json, os, resource, sys
resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv[2]), int(sys.argv[2])))
from aiozarr.storage.references.reference_store import ReferenceStore

async def main():
    store = ReferenceStore(sys.argv[1])
    print(json.dumps([key async for key in store.list_prefix("x/")]))
    print(bytes(await store.get("x/1")).hex(), await store.get("x/999999999"), flush=True)

asyncio.run(main())
# a thread pool's teardown under the heap limit can abort the process at interpreter exit
# (std::terminate, SIGABRT) after the work is done and printed: leave without it
os._exit(0)
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


READ_CHUNK = r"""
import asyncio, os, resource, sys
resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv[2]), int(sys.argv[2])))
from aiozarr.errors import MetadataError
from aiozarr.storage.references.reference_store import ReferenceStore

async def main():
    try:
        await ReferenceStore(sys.argv[1]).get("x/1")
    except MetadataError as error:
        print(error)
    # the peak of this process since its exec (ru_maxrss would start at the size of the
    # process that forked it: a test run's own, hundreds of MiB late in a suite)
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(kib * 1024, flush=True)

asyncio.run(main())
os._exit(0)  # as LIST_KEYS: no teardown under the heap limit
"""


def test_a_record_file_with_more_rows_than_record_size_is_refused_from_its_footer(
    tmp_path: Path,
) -> None:
    root = _references(tmp_path / "refs.parq", record_size=10, chunks=10)
    rows, batch = 5_000_000, 500_000
    url = "/nonexistent/" + "a" * 55
    table = pa.table(
        {
            "path": pa.array([url] * batch),
            "offset": pa.array([0] * batch, pa.int64()),
            "size": pa.array([0] * batch, pa.int64()),
            "raw": pa.array([b"\7"] * batch, pa.binary()),
        }
    )
    with pq.ParquetWriter(root / "x" / "refs.0.parq", table.schema, compression="zstd") as out:
        for _ in range(rows // batch):
            out.write_table(table)
    child = subprocess.run(
        [sys.executable, "-c", READ_CHUNK, str(root), str(CHILD_HEAP)],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    message, peak = child.stdout.splitlines()
    assert "x/refs.0.parq holds 5000000 rows" in message
    assert "record_size = 10 rows" in message
    assert int(peak) < 400 << 20  # the interpreter, numpy and pyarrow; not the rows


async def test_a_store_that_cannot_list_refuses_a_grid_of_more_records_than_it_reads(
    emulator: Emulator,
) -> None:
    prefix = f"parquet-grid-{os.getpid()}"
    _references(emulator.root / prefix / "refs.parq", record_size=2, chunks=2 * 10**9)
    store = ReferenceStore(emulator.http_url(f"{prefix}/refs.parq"))
    emulator.reset_stats()
    with pytest.raises(UnsupportedError, match=r"cannot list x: .* 1000000000 records"):
        [key async for key in store.list_prefix("x/")]
    assert emulator.stats()["by_method"] == {"GET": 1}  # .zmetadata, no record
    assert bytes(await store.get("x/1")) == b"\6"  # reading a chunk still works


@pytest.mark.parametrize(
    ("column", "values", "problem"),
    [
        ("offset", [0.0, float("nan")], "not an integer"),  # pandas' null in a float column
        ("offset", [0.0, 0.5], "not an integer"),
        ("offset", ["0", "x"], "not an integer"),
        ("raw", [None, "text"], "raw value is a str"),
    ],
)
async def test_a_malformed_parquet_row_fails_alone(
    tmp_path: Path, column: str, values: list[Any], problem: str
) -> None:
    root = tmp_path / "refs.parq"
    _references(root, record_size=10, chunks=2)
    (tmp_path / "blob.bin").write_bytes(b"\7\10")
    columns: dict[str, Any] = {
        "path": [str(tmp_path / "blob.bin")] * 2,
        "offset": [0, 1],
        "size": [1, 1],
        "raw": pa.array([None, None], pa.binary()),
    }
    columns[column] = values
    pq.write_table(pa.table(columns), root / "x" / "refs.0.parq")
    store = ReferenceStore(str(root))
    if not isinstance(values[0], str):  # a column of strings: every row is malformed
        assert bytes(await store.get("x/0")) == b"\7"
    with pytest.raises(MetadataError, match=rf"'x/1' \(row 1 of x/refs\.0\.parq\).*{problem}"):
        await store.get("x/1")


@pytest.mark.parametrize("content", [b"", b"PAR1 not parquet"])
async def test_a_record_file_that_is_not_parquet_is_named(tmp_path: Path, content: bytes) -> None:
    root = tmp_path / "refs.parq"
    _references(root, record_size=10, chunks=2)
    (root / "x" / "refs.0.parq").write_bytes(content)
    with pytest.raises(MetadataError, match=r"x/refs\.0\.parq is not a readable Parquet"):
        await ReferenceStore(str(root)).get("x/0")
