"""A chunk several selections of `read_many` / `batch()` need is decoded once for all of
them only where that is right: the same bytes, decoded by the same codecs, into values
that are not objects (`engine/many.py::_decode_burst`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr

OLD = np.array([1, 2, 3, 4], "i4")
NEW = np.array([0.5, 1.5, 2.5, 3.5], "f4")


async def _old_and_new(
    path: str, shards: tuple[int, ...] | None
) -> tuple[aiozarr.AsyncArray, aiozarr.AsyncArray]:
    """Two handles on one chunk: one opened before the array was recreated with another
    dtype (its codecs decode the bytes as int32), one after (float32)."""
    old = await aiozarr.create_array_async(
        path, shape=(4,), chunks=(4,), shards=shards, dtype="i4", compressors=None
    )
    await old.setitem(..., OLD)
    new = await aiozarr.create_array_async(
        path, shape=(4,), chunks=(4,), shards=shards, dtype="f4", compressors=None,
        overwrite=True,
    )  # fmt: skip
    await new.setitem(..., NEW)
    return old, new


@pytest.mark.parametrize("shards", [None, (4,)])
def test_a_batch_decodes_each_handles_chunk_with_its_own_codecs(
    tmp_path: Path, shards: tuple[int, ...] | None
) -> None:
    async def main() -> Any:
        old, new = await _old_and_new(str(tmp_path / "a.zarr"), shards)
        async with aiozarr.batch():
            return await asyncio.gather(old.getitem(...), new.getitem(...))

    older, newer = asyncio.run(main())
    assert newer.dtype == np.float32
    assert np.array_equal(newer, NEW)
    assert np.array_equal(older, NEW.view("i4"))  # the new bytes, as the old handle reads them


def test_read_many_decodes_each_handles_chunk_with_its_own_codecs(tmp_path: Path) -> None:
    async def main() -> Any:
        old, new = await _old_and_new(str(tmp_path / "a.zarr"), None)
        return await aiozarr.read_many_async([(old, ...), (new, ...)])

    older, newer = asyncio.run(main())
    assert np.array_equal(newer, NEW)
    assert np.array_equal(older, NEW.view("i4"))


def _json_array(path: Path) -> aiozarr.Array:
    """A zarr v2 array of JSON values (object dtype, numcodecs' `json2`), one chunk."""
    path.mkdir()
    meta = {
        "zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "|O", "compressor": None,
        "fill_value": None, "order": "C", "filters": [{"id": "json2"}],
    }  # fmt: skip
    (path / ".zarray").write_text(json.dumps(meta))
    arr = aiozarr.open_array(str(path), mode="r+")
    values = np.empty(4, dtype=object)
    values[:] = [[1, 2], {"a": 1}, [3], None]
    arr[...] = values
    return arr


def test_read_many_outputs_never_share_their_objects(tmp_path: Path) -> None:
    arr = _json_array(tmp_path / "j.zarr")
    first, second = aiozarr.read_many([(arr, slice(0, 2)), (arr, ...)])
    assert first.tolist() == [[1, 2], {"a": 1}]
    first[0].append(99)  # a caller edits an element of its own output
    first[1]["b"] = 2
    assert second.tolist() == [[1, 2], {"a": 1}, [3], None]


def test_a_batchs_outputs_never_share_their_objects(tmp_path: Path) -> None:
    handle = _json_array(tmp_path / "j.zarr").async_array

    async def both() -> Any:
        async with aiozarr.batch():
            return await asyncio.gather(handle.getitem(slice(0, 2)), handle.getitem(...))

    first, second = aiozarr.sync.run(both)
    first[0].append(99)
    assert second.tolist() == [[1, 2], {"a": 1}, [3], None]
