"""Hierarchies written by other tools, read and migrated.

- `gdal_v3draft.zarr`: GDAL 3.6.2's Zarr driver with FORMAT=ZARR_V3, which writes the
  2020 v3 draft layout (make_gdal_fixture.py).
- `gdal_blosc_v2.zarr`, `gdal_blosc_v3draft.zarr`: GDAL 3.6.2 again, blosc with its
  BLOSC_SHUFFLE names "NONE" / "BIT" left in the metadata (make_gdal_blosc_fixture.py).
- `z5py_v2.zarr`: z5py, blosc chunks with the 16 zero bytes z5py up to 2.0 left after
  each frame (make_z5py_fixture.py).
- `zarrita_v3early.zarr`: zarrita 0.1.0a6, the v3 layout as it stood before 1.0
  (`endian` codec, `transpose` order "F", no `index_codecs`; make_zarrita_fixture.py).

Each tool read its own output back into the `.expected.json` beside the fixture.
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.errors import AiozarrWarning, ChecksumError, UnsupportedError
from aiozarr.tools.migration import MigrateProgress, migrate

DATA = Path(__file__).parent / "data"
GDAL = DATA / "gdal_v3draft.zarr"
ZARRITA = DATA / "zarrita_v3early.zarr"
GDAL_BLOSC_V2 = DATA / "gdal_blosc_v2.zarr"
GDAL_BLOSC_V3DRAFT = DATA / "gdal_blosc_v3draft.zarr"
GDALS = (GDAL, GDAL_BLOSC_V2, GDAL_BLOSC_V3DRAFT)
Z5PY = DATA / "z5py_v2.zarr"

GROUP_ATTRS = {
    GDAL: {"": {"title": "gdal fixture", "version": 3}, "sub": {"units": "m"}},
    GDAL_BLOSC_V2: {"": {}},
    GDAL_BLOSC_V3DRAFT: {"": {}},
    Z5PY: {"": {}},
    ZARRITA: {"": {"title": "zarrita fixture"}, "sub": {"level": 1}},
}


def _expected(fixture: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads((DATA / fixture.name.replace(".zarr", ".expected.json")).read_text())
    return doc["arrays"]


def _fill(fixture: Path, item: dict[str, Any]) -> Any:
    return item["nodata"] if fixture in GDALS else item["fill_value"]


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # quirks are tested below
        yield


@pytest.mark.parametrize(
    "fixture",
    [GDAL, ZARRITA, GDAL_BLOSC_V2, GDAL_BLOSC_V3DRAFT, Z5PY],
    ids=["gdal", "zarrita", "gdal-blosc-v2", "gdal-blosc-v3draft", "z5py"],
)
def test_tool_output_reads_as_the_tool_reads_it(fixture: Path) -> None:
    root = aiozarr.open_group(fixture, mode="r")
    for path, attrs in GROUP_ATTRS[fixture].items():
        assert (root[path] if path else root).attrs == attrs
    expected = _expected(fixture)
    found = []
    for name, node in root.members():
        if isinstance(node, aiozarr.Group):
            found += [f"{name}/{n}" for n in node.member_names()]
        else:
            found.append(name)
    assert sorted(found) == sorted(expected)
    for path, item in expected.items():
        arr = root[path]
        assert arr.shape == tuple(item["shape"]), path
        assert arr.dtype.newbyteorder("<") == np.dtype(item["dtype"]).newbyteorder("<"), path
        np.testing.assert_array_equal(arr[...], np.array(item["values"]), err_msg=path)
        fill = _fill(fixture, item)
        if fill is not None:
            assert arr.fill_value == fill, path


@pytest.mark.parametrize("fixture", [GDAL_BLOSC_V2, GDAL_BLOSC_V3DRAFT], ids=["v2", "v3draft"])
def test_gdal_blosc_shuffle_names_are_read_with_warnings(fixture: Path) -> None:
    for name, spelling in (("none", "'NONE'"), ("bit", "'BIT'")):
        key = f"{name}/.zarray" if fixture == GDAL_BLOSC_V2 else f"meta/root/{name}.array.json"
        with pytest.warns(AiozarrWarning, match=f"{key}: .*'shuffle'.*{spelling}"):
            aiozarr.open_array(fixture, name, mode="r")[...]


def test_z5py_blosc_frames_with_trailing_bytes_read_as_numcodecs_reads_them() -> None:
    chunk = (Z5PY / "floats" / "1.1").read_bytes()
    assert chunk.endswith(bytes(16)) and int.from_bytes(chunk[12:16], "little") == len(chunk) - 16
    for name, item in _expected(Z5PY).items():
        expected = np.array(item["values"], dtype=item["dtype"])
        np.testing.assert_array_equal(zarr.open_array(Z5PY / name, mode="r")[...], expected)
        np.testing.assert_array_equal(aiozarr.open_array(Z5PY, name, mode="r")[...], expected)


def test_gdal_raster_attributes_survive() -> None:
    band = aiozarr.open_array(GDAL, "raster_band1", mode="r")
    assert band.attrs["_ARRAY_DIMENSIONS"] == ["raster_Y", "raster_X"]
    assert band.attrs["_CRS"]["projjson"]["id"] == {"authority": "EPSG", "code": 4326}


def test_zarrita_quirks_are_read_with_warnings() -> None:
    with pytest.warns(AiozarrWarning) as caught:
        aiozarr.open_array(ZARRITA, "sharded", mode="r")[...]
        aiozarr.open_array(ZARRITA, "sub/fortran", mode="r")[...]
    text = " ".join(str(w.message) for w in caught)
    for quirk in ("'endian' is the pre-1.0 name of 'bytes'", "'index_codecs' is missing", "'F'"):
        assert quirk in text


@pytest.mark.parametrize("fixture", [GDAL, ZARRITA], ids=["gdal", "zarrita"])
def test_tool_output_migrates_to_v3_that_zarr_python_reads(fixture: Path, tmp_path: Path) -> None:
    seen: list[MigrateProgress] = []
    migrate(fixture, tmp_path / "v3", progress=seen.append)
    assert seen[-1].chunks_reencoded == 0  # every codec here has a byte-compatible v3 twin
    zroot = zarr.open_group(tmp_path / "v3", mode="r", zarr_format=3)
    for path, attrs in GROUP_ATTRS[fixture].items():
        assert dict((zroot[path] if path else zroot).attrs) == attrs
    for path, item in _expected(fixture).items():
        arr = zroot[path]
        assert arr.metadata.zarr_format == 3
        np.testing.assert_array_equal(arr[...], np.array(item["values"]), err_msg=path)
        fill = _fill(fixture, item)
        assert arr.fill_value == (0 if fill is None else fill), path
    # Stored chunk bytes carried over unchanged.
    out = tmp_path / "v3"
    if fixture == GDAL:
        pairs = [
            ("data/root/ints/c2/2", "ints/c/2/2"),
            ("data/root/sub/floats/c1", "sub/floats/c/1"),
            ("data/root/sub/fortran/c1/0", "sub/fortran/c/1/0"),
            ("data/root/raster_band2/c2/1", "raster_band2/c/2/1"),
        ]
        dims = zroot["raster_band1"].metadata.dimension_names
        assert dims == ("raster_Y", "raster_X")  # from GDAL's _ARRAY_DIMENSIONS
        assert "_ARRAY_DIMENSIONS" not in zroot["raster_band1"].attrs
    else:
        pairs = [(p, p) for p in ("ints/c/2/2", "sub/floats/c/1", "sharded/c/1/0")]
        assert zroot["ints"].metadata.dimension_names == ("y", "x")
        doc = json.loads((out / "sub" / "fortran" / "zarr.json").read_text())
        assert [c["name"] for c in doc["codecs"]] == ["transpose", "bytes"]
        assert doc["codecs"][0]["configuration"] == {"order": [1, 0]}
    for src, dst in pairs:
        assert (out / dst).read_bytes() == (fixture / src).read_bytes(), src


def test_gdal_output_migrates_to_v2(tmp_path: Path) -> None:
    migrate(GDAL, tmp_path / "v2", zarr_format=2)
    zroot = zarr.open_group(tmp_path / "v2", mode="r", zarr_format=2)
    for path, item in _expected(GDAL).items():
        np.testing.assert_array_equal(zroot[path][...], np.array(item["values"]), err_msg=path)
    assert (tmp_path / "v2" / "sub" / "fortran" / "1.0").read_bytes() == (
        GDAL / "data" / "root" / "sub" / "fortran" / "c1" / "0"
    ).read_bytes()


def test_v3_sources_go_to_v2_through_copy_not_migrate(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match=r"aiozarr\.copy"):
        migrate(ZARRITA, tmp_path / "v2", zarr_format=2)


def test_zarrita_shard_index_checksum_is_still_checked(tmp_path: Path) -> None:
    copy = tmp_path / "z.zarr"
    shutil.copytree(ZARRITA, copy)
    shard = copy / "sharded" / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF  # the crc32c after the index
    shard.write_bytes(bytes(data))
    with pytest.raises(ChecksumError):
        aiozarr.open_array(copy, "sharded", mode="r")[...]
