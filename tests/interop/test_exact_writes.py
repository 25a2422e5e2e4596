"""What aiozarr writes, zarr-python and TensorStore read back bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore as ts
import zarr

import aiozarr

# A NaN whose payload is not the canonical one, and the canonical NaN.
ODD_NAN = np.array(0x7FF8_0000_0000_0001, dtype="<u8").view("<f8")[()]
NAN = np.float64(np.nan)


def _bits(values: Any) -> np.ndarray:
    return np.asarray(values, dtype="<f8").view("<u8")


def _tensorstore(path: Path, zarr_format: int) -> np.ndarray:
    spec = {"driver": "zarr3" if zarr_format == 3 else "zarr", "kvstore": f"file://{path}"}
    return ts.open(spec).result().read().result()


def _read_back(path: Path, zarr_format: int) -> list[np.ndarray]:
    """The whole array as zarr-python and as TensorStore read it."""
    return [
        np.asarray(zarr.open_array(path, mode="r", zarr_format=zarr_format)[...]),
        np.asarray(_tensorstore(path, zarr_format)),
    ]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("value", [3.5, -0.0, 0.0], ids=["value", "minus-zero", "fill"])
def test_zero_d_arrays_write(tmp_path: Path, zarr_format: int, value: float) -> None:
    path = tmp_path / "a.zarr"
    arr = aiozarr.create_array(path, shape=(), dtype="f8", zarr_format=zarr_format, fill_value=0)
    arr[...] = value
    assert _bits(arr[...]) == _bits(value)
    for read in _read_back(path, zarr_format):
        assert read.shape == () and _bits(read) == _bits(value)
    arr[()] = np.float64(7.25)
    assert arr[()] == 7.25
    for read in _read_back(path, zarr_format):
        assert read == 7.25


def _chunk_keys(path: Path) -> set[str]:
    names = {"zarr.json", ".zarray", ".zattrs"}
    return {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()} - names


@pytest.mark.parametrize(
    ("zarr_format", "shards"), [(2, None), (3, None), (3, (4,))], ids=["v2", "v3", "v3-sharded"]
)
def test_chunks_that_only_equal_the_fill_value_are_written(
    tmp_path: Path, zarr_format: int, shards: tuple[int, ...] | None
) -> None:
    # Chunks of 2: -0.0 (fill +0.0), an odd NaN payload, +0.0 (the fill: not stored), 1.0.
    path = tmp_path / "a.zarr"
    arr = aiozarr.create_array(
        path, shape=(8,), chunks=(2,), shards=shards, dtype="f8", zarr_format=zarr_format
    )
    data = np.array([-0.0, -0.0, ODD_NAN, ODD_NAN, 0.0, 0.0, 1.0, 1.0])
    arr[...] = data
    np.testing.assert_array_equal(_bits(arr[...]), _bits(data))
    for read in _read_back(path, zarr_format):
        np.testing.assert_array_equal(_bits(read), _bits(data))
    if shards is None:
        sep = "." if zarr_format == 2 else "/"
        expected = {"0", "1", "3"} if zarr_format == 2 else {f"c{sep}{i}" for i in (0, 1, 3)}
        assert _chunk_keys(path) == expected  # the chunk of +0.0 is not stored


def test_canonical_nan_is_written_under_a_nan_fill_with_another_payload(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    arr = aiozarr.create_array(path, shape=(4,), chunks=(2,), dtype="f8", fill_value=ODD_NAN)
    arr[...] = np.array([NAN, NAN, ODD_NAN, ODD_NAN])
    assert _chunk_keys(path) == {"c/0"}  # the chunk of the fill's own payload is left out
    for read in [arr[...], *_read_back(path, 3)]:
        np.testing.assert_array_equal(_bits(read), _bits([NAN, NAN, ODD_NAN, ODD_NAN]))
