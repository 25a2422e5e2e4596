"""A variable's encoding after `engine="aiozarr"` opens it: the codecs as xarray's zarr
engine gives them, so writing the dataset again (zarr-python's `to_zarr` or aiozarr's)
keeps them; and the openings xarray users make that are not URLs or aiozarr stores."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

from aiozarr.errors import DimensionNamesError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")


def dataset() -> xr.Dataset:
    values = np.arange(24.0).reshape(4, 6)
    return xr.Dataset({"v": (("y", "x"), values)}, coords={"x": np.arange(6)})


def codecs_of(zarr_format: int) -> dict[str, Any]:
    if zarr_format == 3:
        return {
            "filters": (zarr.codecs.TransposeCodec(order=(1, 0)),),
            "serializer": zarr.codecs.BytesCodec(endian="big"),
            "compressors": (zarr.codecs.ZstdCodec(level=5), zarr.codecs.Crc32cCodec()),
        }
    return {"filters": (numcodecs.Delta(dtype="<f8"),), "compressors": (numcodecs.Zlib(level=4),)}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("writer", ["zarr-python", "aiozarr"])
def test_codecs_survive_open_and_write(tmp_path: Path, zarr_format: int, writer: str) -> None:
    codecs = codecs_of(zarr_format)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset().to_zarr(tmp_path / "a.zarr", zarr_format=zarr_format, encoding={"v": codecs})
    opened = xr.open_dataset(tmp_path / "a.zarr", engine="aiozarr")
    theirs = xr.open_dataset(tmp_path / "a.zarr", engine="zarr")
    for key in ("filters", "compressors", "serializer"):
        assert opened.v.encoding.get(key) == theirs.v.encoding.get(key), key
    if writer == "aiozarr":
        to_zarr(opened, tmp_path / "b.zarr", zarr_format=zarr_format)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opened.to_zarr(tmp_path / "b.zarr", zarr_format=zarr_format)
    again = xr.open_dataset(tmp_path / "b.zarr", engine="aiozarr")
    for key, value in codecs.items():
        assert again.v.encoding[key] == value, key
    xr.testing.assert_identical(again.load(), dataset())


def test_sharded_variables_give_the_codecs_inside_the_shards(tmp_path: Path) -> None:
    encoding = {"v": {"chunks": (2, 3), "shards": (4, 6), "compressors": zarr.codecs.GzipCodec()}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset().to_zarr(tmp_path / "s.zarr", zarr_format=3, encoding=encoding)
    ours = xr.open_dataset(tmp_path / "s.zarr", engine="aiozarr").v.encoding
    theirs = xr.open_dataset(tmp_path / "s.zarr", engine="zarr").v.encoding
    assert ours["compressors"] == theirs["compressors"] == (zarr.codecs.GzipCodec(),)
    assert ours["serializer"] == theirs["serializer"]
    assert ours["shards"] == theirs["shards"] == (4, 6)


def test_an_array_without_dimension_names_is_a_key_error(tmp_path: Path) -> None:
    root = zarr.open_group(tmp_path / "g.zarr", mode="w", zarr_format=3)
    root.create_array("bar", shape=(3, 5), dtype="f4")
    with pytest.raises(DimensionNamesError, match="dimension_names") as caught:
        xr.open_dataset(tmp_path / "g.zarr", engine="aiozarr", consolidated=False)
    assert isinstance(caught.value, KeyError)
    assert "'bar'" in str(caught.value)


def test_a_dict_written_by_to_zarr_and_a_directory_named_zip(tmp_path: Path) -> None:
    store: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset().to_zarr(store, zarr_format=3)
        dataset().to_zarr(str(tmp_path / "d.zarr.zip"), zarr_format=3)
    assert (tmp_path / "d.zarr.zip").is_dir()
    for source in (store, tmp_path / "d.zarr.zip"):
        xr.testing.assert_identical(xr.open_dataset(source, engine="aiozarr").load(), dataset())


def test_a_missing_store_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        xr.open_dataset(tmp_path / "nowhere.zarr", engine="aiozarr")


def test_writing_modes_are_refused(tmp_path: Path) -> None:
    dataset().pipe(to_zarr, tmp_path / "m.zarr")
    xr.open_dataset(tmp_path / "m.zarr", engine="aiozarr", mode="r", cache_members=False)
    with pytest.raises(ValueError, match="mode must be one of r, r\\+, a"):
        xr.open_dataset(tmp_path / "m.zarr", engine="aiozarr", mode="w")
