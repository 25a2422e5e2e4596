"""`migrate`: v1 and 2020-draft arrays rewritten as v2 / v3; zarr-python reads the result."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
from test_v1 import write_v1

from aiozarr.tools.migration import migrate

DRAFT = Path(__file__).parent / "data" / "v3draft.zarr"


def _zarr_read(path: Path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(path, mode="r")[:]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_v1_blosc_migrates_by_copying_chunk_bytes(tmp_path: Path, zarr_format: int) -> None:
    data = np.arange(40, dtype="<i8").reshape(8, 5)
    codec = numcodecs.Blosc("zstd", 3, 2)
    write_v1(
        tmp_path / "v1",
        data,
        (3, 2),
        "blosc",
        {"cname": "zstd", "clevel": 3, "shuffle": 2},
        codec,
        attrs={"a": 1},
    )
    out = migrate(tmp_path / "v1", tmp_path / "out", zarr_format=zarr_format)
    assert out.attrs == {"a": 1}
    np.testing.assert_array_equal(_zarr_read(tmp_path / "out"), data)
    key = "0.1" if zarr_format == 2 else "c/0/1"
    assert (tmp_path / "out" / key).read_bytes() == (tmp_path / "v1" / "0.1").read_bytes()


def test_v1_fortran_big_endian_uncompressed_to_v3_copies(tmp_path: Path) -> None:
    data = np.arange(30, dtype=">u4").reshape(5, 6)
    write_v1(tmp_path / "v1", data, (2, 4), "none", None, None, order="F")
    migrate(tmp_path / "v1", tmp_path / "out")
    np.testing.assert_array_equal(_zarr_read(tmp_path / "out"), data)
    assert (tmp_path / "out" / "c" / "1" / "0").read_bytes() == (
        tmp_path / "v1" / "1.0"
    ).read_bytes()


def test_v1_zlib_to_v3_is_recompressed(tmp_path: Path) -> None:
    data = np.linspace(-1, 1, 50).reshape(10, 5)
    write_v1(
        tmp_path / "v1",
        data,
        (4, 5),
        "zlib",
        3,
        numcodecs.Zlib(3),
        fill_value="NaN",
        skip=((2, 0),),
    )
    migrate(tmp_path / "v1", tmp_path / "out")
    expected = data.copy()
    expected[8:] = np.nan
    np.testing.assert_array_equal(_zarr_read(tmp_path / "out"), expected)


@pytest.mark.parametrize("name", ["floats", "grp/ints", "fortran"])
def test_draft_arrays_migrate_to_v3(tmp_path: Path, name: str) -> None:
    draft = shutil.copytree(DRAFT, tmp_path / "draft")
    out = migrate(draft, tmp_path / "out", src_path=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = zarr.open_array(tmp_path / "out", mode="r")
        np.testing.assert_array_equal(got[:], out[:])
    source = {
        "floats": np.concatenate([np.linspace(0, 1, 8), [np.nan, np.nan]]),
        "grp/ints": np.arange(35).reshape(5, 7),
        "fortran": np.arange(16).reshape(4, 4),
    }[name]
    np.testing.assert_array_equal(out[:], source)
