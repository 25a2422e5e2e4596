"""A v2 array whose fill value is null: its unwritten elements read as zarr-python
reads them (an empty string or bytes for variable-length ones, zero for numbers), and a
partly written chunk holds those, not an integer 0 among strings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import aiozarr


def _v2(path: Path, dtype: str, filters: list[dict[str, Any]] | None) -> None:
    path.mkdir()
    meta = {
        "zarr_format": 2,
        "shape": [3],
        "chunks": [2],
        "dtype": dtype,
        "compressor": None,
        "fill_value": None,
        "filters": filters,
        "order": "C",
    }
    (path / ".zarray").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("dtype", "codec", "empty", "written"),
    [("|O", "vlen-utf8", "", ["x", "y"]), ("|O", "vlen-bytes", b"", [b"x", b"y"])],
)
def test_unwritten_variable_length_elements_are_empty(
    tmp_path: Path, dtype: str, codec: str, empty: Any, written: list[Any]
) -> None:
    _v2(tmp_path / "a", dtype, [{"id": codec}])
    arr = aiozarr.open_array(tmp_path / "a")
    assert arr[:].tolist() == [empty] * 3
    arr[0:2] = np.array(written, dtype=object)
    arr[2:3] = np.array(written[:1], dtype=object)
    arr.resize((4,))
    expected = [*written, written[0], empty]
    assert arr[:].tolist() == expected
    assert zarr.open_array(str(tmp_path / "a"), mode="r")[:].tolist() == expected


def test_strings_created_without_a_fill_value(tmp_path: Path) -> None:
    arr = aiozarr.create_array(tmp_path / "s", shape=(3,), chunks=(2,), dtype=str, zarr_format=2)
    arr[0:2] = ["x", "y"]
    assert arr[:].tolist() == ["x", "y", ""]
    assert zarr.open_array(str(tmp_path / "s"), mode="r")[:].tolist() == ["x", "y", ""]


def test_numbers_without_a_fill_value_read_zero(tmp_path: Path) -> None:
    _v2(tmp_path / "n", "<i4", None)
    assert aiozarr.open_array(tmp_path / "n")[:].tolist() == [0, 0, 0]
