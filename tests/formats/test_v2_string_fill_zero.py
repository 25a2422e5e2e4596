"""A v2 string or bytes array whose `.zarray` says `"fill_value": 0` (zarr-python 2 gave
every object array that fill) or another number: aiozarr reads the unwritten elements as
zarr-python 3 does, and writes back a fill that every reader reads the same."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from tests.formats.test_object_fill_values import v2_object_array

import aiozarr
from aiozarr.errors import MetadataError


def v2_document(path: Path, codec: str, fill: Any) -> Path:
    return Path(v2_object_array(path, [{"id": codec}], fill))


def zarr_python(path: Path) -> tuple[Any, list[Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arr = zarr.open_array(str(path), mode="r")
        return arr.fill_value, arr[:].tolist()


@pytest.mark.parametrize("fill", [0, 1, -1, 0.0, 2.5, True, "", "x"])
def test_a_string_fill_reads_as_zarr_python_reads_it(tmp_path: Path, fill: Any) -> None:
    path = v2_document(tmp_path / "a", "vlen-utf8", fill)
    arr = aiozarr.open_array(path)
    expected_fill, expected = zarr_python(path)
    assert arr.fill_value == expected_fill and type(arr.fill_value) is str
    assert arr[:].tolist() == expected


def test_a_rewritten_string_fill_of_zero_reads_the_same_everywhere(tmp_path: Path) -> None:
    path = v2_document(tmp_path / "a", "vlen-utf8", 0)
    arr = aiozarr.open_array(path)
    arr[0:1] = np.array(["a"], dtype=object)
    arr.resize((5,))  # rewrites .zarray
    assert json.loads((path / ".zarray").read_text())["fill_value"] == "0"
    ours = aiozarr.open_array(path)[:].tolist()
    assert ours == ["a", "0", "0", "0", "0"]
    assert zarr_python(path)[1] == ours


@pytest.mark.parametrize("fill", [0, 0.0, False])
def test_a_bytes_fill_of_zero_is_empty_bytes(tmp_path: Path, fill: Any) -> None:
    # numcodecs' vlen-bytes stores 0 as b"" (zarr-python 2's partly written chunks hold
    # it); zarr-python 3 opens no such document, but opens the one aiozarr writes back
    path = v2_document(tmp_path / "b", "vlen-bytes", fill)
    arr = aiozarr.open_array(path)
    assert arr.fill_value == b"" and arr[:].tolist() == [b""] * 4
    arr[0:1] = np.array([b"q"], dtype=object)
    arr.resize((5,))
    assert json.loads((path / ".zarray").read_text())["fill_value"] == ""
    assert zarr_python(path) == (b"", [b"q", b"", b"", b"", b""])
    assert aiozarr.open_array(path)[:].tolist() == [b"q", b"", b"", b"", b""]


@pytest.mark.parametrize(
    ("codec", "fill"), [("vlen-bytes", 1), ("vlen-bytes", [0]), ("vlen-utf8", [0])]
)
def test_other_fills_of_strings_or_bytes_are_refused(tmp_path: Path, codec: str, fill: Any) -> None:
    path = v2_document(tmp_path / "c", codec, fill)
    with pytest.raises(MetadataError, match=r'\.zarray: field "fill_value"'):
        aiozarr.open_array(path)
