"""`create_array` / `create_group` with `overwrite=True` whose metadata cannot be
written (an attribute JSON does not hold, a data type the format has no name for) is
refused before anything is deleted: the array there is kept, as zarr-python 3.4.2 keeps
it. It was deleted first, then the refusal left nothing in its place."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError, UnsupportedError

_UNWRITABLE: list[tuple[dict[str, Any], type[Exception], int]] = [
    ({"attributes": {"when": datetime.datetime(2020, 1, 1)}}, MetadataError, 2),
    ({"attributes": {"when": datetime.datetime(2020, 1, 1)}}, MetadataError, 3),
    ({"dtype": np.dtype([("a", "<i4", (2,))])}, UnsupportedError, 3),
]


@pytest.mark.parametrize(("options", "error", "zarr_format"), _UNWRITABLE)
def test_a_refused_array_keeps_the_one_there(
    tmp_path: Path, options: dict[str, Any], error: type[Exception], zarr_format: int
) -> None:
    old = aiozarr.create_array(str(tmp_path), "x", shape=(2,), dtype="i4", zarr_format=zarr_format)
    old[...] = [7, 8]
    wanted = {"shape": (2,), "dtype": "i4", "zarr_format": zarr_format, **options}
    with pytest.raises(error):
        aiozarr.create_array(str(tmp_path), "x", overwrite=True, **wanted)
    np.testing.assert_array_equal(aiozarr.open_array(str(tmp_path / "x"))[...], [7, 8])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_refused_group_keeps_the_node_there(tmp_path: Path, zarr_format: int) -> None:
    old = aiozarr.create_array(str(tmp_path), "x", shape=(2,), dtype="i4", zarr_format=zarr_format)
    old[...] = [7, 8]
    with pytest.raises(MetadataError, match="cannot write as JSON"):
        aiozarr.create_group(
            str(tmp_path),
            "x",
            zarr_format=zarr_format,
            overwrite=True,
            attributes={"when": datetime.date(2020, 1, 1)},
        )
    np.testing.assert_array_equal(aiozarr.open_array(str(tmp_path / "x"))[...], [7, 8])
