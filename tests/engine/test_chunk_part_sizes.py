"""A span of an uncompressed chunk is read only where the chunk's stored size is checked,
as a whole read checks it: a reference (JSON or Parquet, or a value inline in the
reference file) whose length differs from the chunk's size, and a chunk stored at
another size on a store that tells no object size, raise a named error instead of
reading a span silently (icechunk's virtual chunks: tests/interop/icechunk)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import CodecError, ValueTooLargeError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.zarr_store import ZarrStore
from aiozarr.storage.references.reference_store import ReferenceStore

VALUES = np.arange(64 * 64, dtype="<i8").reshape(64, 64)
ZARRAY = {
    "zarr_format": 2,
    "shape": [64, 64],
    "chunks": [64, 64],
    "dtype": "<i8",
    "compressor": None,
    "fill_value": None,
    "filters": None,
    "order": "C",
}


def _references(root: Path, form: str, length: int) -> Path:
    """References to array `v`: one chunk, `length` bytes at offset 6 of `data.bin`, a
    file that holds more than the chunk on both sides (or `length` bytes inline)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "data.bin").write_bytes(b"header" + VALUES.tobytes() + b"trailer--")
    if form in ("json", "inline"):
        refs: dict[str, Any] = {".zgroup": '{"zarr_format":2}', "v/.zarray": json.dumps(ZARRAY)}
        refs["v/0.0"] = ["data.bin", 6, length]
        if form == "inline":  # the chunk's bytes in the reference file itself
            inline = (VALUES.tobytes() + bytes(8))[:length]
            refs["v/0.0"] = "base64:" + base64.b64encode(inline).decode()
        (root / "refs.json").write_text(json.dumps({"version": 1, "refs": refs}))
        return root / "refs.json"
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    out = root / "refs.parq"
    (out / "v").mkdir(parents=True)
    metadata = {".zgroup": {"zarr_format": 2}, "v/.zarray": ZARRAY}
    (out / ".zmetadata").write_text(json.dumps({"record_size": 10, "metadata": metadata}))
    table = pa.table(
        {
            "path": pa.array([str(root / "data.bin")], pa.string()),
            "offset": pa.array([6], pa.int64()),
            "size": pa.array([length], pa.int64()),
            "raw": pa.array([None], pa.binary()),
        }
    )
    pq.write_table(table, out / "v" / "refs.0.parq")
    return out


def _opened(source: Path) -> tuple[Any, CountingStore]:
    counted = CountingStore(ReferenceStore(source))
    return aiozarr.open_array(counted, "v", mode="r"), counted


@pytest.mark.parametrize("form", ["json", "parquet", "inline"])
@pytest.mark.parametrize("wrong", [-1, 1])
def test_a_span_inside_a_reference_of_the_wrong_length_is_refused(
    tmp_path: Path, form: str, wrong: int
) -> None:
    """One element of a chunk whose reference is a byte too short or too long: the
    error the whole read raises, never the element read from a span inside it."""
    arr, _ = _opened(_references(tmp_path, form, VALUES.nbytes + wrong))
    size = VALUES.nbytes + wrong
    with pytest.raises(CodecError, match=rf"'v/0\.0' is stored as {size} bytes"):
        arr[3, 5]
    with pytest.raises((CodecError, ValueTooLargeError), match=r"'v/0\.0'"):
        arr[...]  # too long: over its bound before it is read


@pytest.mark.parametrize("form", ["json", "parquet", "inline"])
def test_a_reference_of_the_chunk_s_length_is_read_as_a_span(tmp_path: Path, form: str) -> None:
    arr, counted = _opened(_references(tmp_path, form, VALUES.nbytes))
    counted.reset()
    assert arr[3, 5] == VALUES[3, 5]
    assert counted.bytes_read == 8
    counted.reset()
    np.testing.assert_array_equal(arr[3:5, 10:14], VALUES[3:5, 10:14])
    assert counted.bytes_read == (64 + 4) * 8  # row 3 from column 10 to row 4 at 13


@pytest.mark.parametrize("extra", [8, -8])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_chunk_of_another_size_on_a_store_that_tells_no_size_is_refused(
    extra: int, zarr_format: int
) -> None:
    """zarr-python's stores answer no version, so no object size: one element of a chunk
    stored 8 bytes longer (or shorter) raises what a whole read raises."""
    zarr = pytest.importorskip("zarr")
    arr = aiozarr.create_array(
        zarr.storage.MemoryStore(), shape=(64, 64), chunks=(64, 64), dtype="<i8",
        compressors=None, zarr_format=zarr_format,
    )  # fmt: skip
    arr[...] = VALUES
    key = "c/0/0" if zarr_format == 3 else "0.0"
    stored = bytes(aiozarr.sync.run(arr.store.get, key))
    changed = stored + bytes(extra) if extra > 0 else stored[:extra]
    aiozarr.sync.run(arr.store.set, key, changed)
    with pytest.raises((CodecError, ValueTooLargeError), match=f"'{key}'") as whole:
        arr[...]
    with pytest.raises(type(whole.value), match=f"'{key}'"):
        arr[3, 5]


def test_a_store_that_tells_no_size_reads_an_uncompressed_chunk_whole() -> None:
    zarr = pytest.importorskip("zarr")
    counted = CountingStore(ZarrStore(zarr.storage.MemoryStore()))
    arr = aiozarr.create_array(
        counted, shape=(64, 64), chunks=(64, 64), dtype="<i8", compressors=None
    )
    arr[...] = VALUES
    counted.reset()
    assert arr[3, 5] == VALUES[3, 5]
    assert counted.bytes_read == VALUES.nbytes


@pytest.mark.parametrize("extra", [0, 8, -8])
def test_a_span_is_never_decoded_unless_its_answer_tells_the_chunk_s_size(
    tmp_path: Path, extra: int
) -> None:
    """A store may declare sized versions and still answer one without a size (obstore's
    HTTP store from a server that sends no ETag, as `python -m http.server`, answered
    with no version at all): a span so answered is not decoded unchecked, the chunk is
    read whole and checked as a whole read is."""
    from tests.storage.http_server import FolderServer

    arr = aiozarr.create_array(
        str(tmp_path / "a.zarr"), shape=(64, 64), chunks=(64, 64), dtype="<i8",
        compressors=None,
    )  # fmt: skip
    arr[...] = VALUES
    chunk = tmp_path / "a.zarr" / "c" / "0" / "0"
    stored = chunk.read_bytes()
    chunk.write_bytes(stored + bytes(extra) if extra >= 0 else stored[:extra])
    with FolderServer(tmp_path) as server:
        over_http = aiozarr.open_array(f"{server.url}/a.zarr", mode="r")
        if not extra:
            assert over_http[3, 5] == VALUES[3, 5]
            return
        with pytest.raises((CodecError, ValueTooLargeError), match="'c/0/0'"):
            over_http[3, 5]
