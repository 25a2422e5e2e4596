"""numcodecs' PackBits stores each value's truthiness: on a v2 array that is not bool, 7
reads back as 1. Creating such an array is refused before anything is written; one
already stored reads as zarr-python reads it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")


@pytest.mark.parametrize("dtype", ["u1", "i4", "f8"])
@pytest.mark.parametrize("packbits", [lambda: numcodecs.PackBits(), lambda: {"id": "packbits"}])
def test_a_v2_packbits_filter_on_values_that_are_not_bool_is_refused(
    tmp_path: Path, dtype: str, packbits: object
) -> None:
    where = tmp_path / "a.zarr"
    with pytest.raises(
        MetadataError, match=rf"'packbits' encodes bool values, not {np.dtype(dtype)}"
    ):
        aiozarr.create_array(
            where,
            shape=(10,),
            chunks=(5,),
            dtype=dtype,
            zarr_format=2,
            filters=[packbits()],  # type: ignore[operator]
        )
    assert not where.exists()  # nothing written


def test_a_v3_packbits_filter_on_values_that_are_not_bool_is_refused(tmp_path: Path) -> None:
    where = tmp_path / "a.zarr"
    with pytest.raises(
        MetadataError, match=r"'numcodecs\.packbits' encodes bool chunks, got int32"
    ):
        aiozarr.create_array(
            where, shape=(10,), dtype="i4", filters=[{"name": "numcodecs.packbits"}]
        )
    assert not where.exists()


def test_packbits_on_bool_values_is_created(tmp_path: Path) -> None:
    values = np.arange(10) % 3 == 0
    flags = aiozarr.create_array(
        tmp_path / "b.zarr", shape=(10,), dtype=bool, zarr_format=2, filters=[numcodecs.PackBits()]
    )
    flags[...] = values
    # an earlier filter casting the values to bool hands PackBits bools
    cast = numcodecs.AsType(encode_dtype="bool", decode_dtype="i4")
    ints = aiozarr.create_array(
        tmp_path / "c.zarr",
        shape=(10,),
        dtype="i4",
        zarr_format=2,
        filters=[cast, numcodecs.PackBits()],
    )
    ints[...] = values
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "b.zarr")[...], values)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "c.zarr")[...], values)


def test_a_stored_v2_packbits_array_of_bytes_reads_as_zarr_python_reads_it(tmp_path: Path) -> None:
    where = str(tmp_path / "d.zarr")
    stored = zarr.create_array(
        where,
        shape=(10,),
        chunks=(5,),
        dtype="u1",
        zarr_format=2,
        filters=[numcodecs.PackBits()],
        compressors=None,
    )
    stored[...] = np.arange(10, dtype="u1")
    opened = aiozarr.open_array(where, mode="r+")
    np.testing.assert_array_equal(opened[...], zarr.open_array(where)[...])
    assert opened[...].tolist() == [0] + [1] * 9
    opened[...] = np.zeros(10, dtype="u1")  # and still written
    assert zarr.open_array(where)[...].tolist() == [0] * 10
