"""`aiozarr.xarray.to_zarr` and the Zarr format of what is there: a new group takes the
format of the hierarchy above it (a given one that differs is refused); variables of
numpy's `StringDType` and v3 codecs from an encoding written as Zarr v2; a string
`_FillValue` no v3 reader decodes; read back by aiozarr and by xarray's own engine
(zarr-python)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

from tests.integrations.xarray_peers import read, theirs  # noqa: E402

from aiozarr.errors import MetadataError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")


def _root(path: Path, zarr_format: int) -> None:
    theirs(xr.Dataset({"r": ("x", [1.0, 2.0])}), path, zarr_format=zarr_format)


def _both(path: Path, group: str | None = None) -> list[xr.Dataset]:
    """The group read by aiozarr's engine and by xarray's own."""
    return [read(path, engine, group=group) for engine in ("aiozarr", "zarr")]


# -- a new group takes the hierarchy's format ---------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("mode", ["a", "w-", "w"])
@pytest.mark.parametrize("group", ["sub", "g/h"])
def test_a_new_group_takes_the_format_of_the_hierarchy(
    tmp_path: Path, zarr_format: int, mode: str, group: str
) -> None:
    path = tmp_path / "s.zarr"
    _root(path, zarr_format)
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    to_zarr(ds, path, group=group, mode=mode)
    document = ".zarray" if zarr_format == 2 else "zarr.json"
    assert (path / group / "a" / document).exists()
    assert (path / "zarr.json").exists() == (zarr_format == 3)  # none beside a v2 root
    for got in _both(path, group):
        xr.testing.assert_identical(got, ds)
    for root in _both(path):  # the root's variables are still found
        assert root["r"].values.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(("stored", "given"), [(2, 3), (3, 2)])
@pytest.mark.parametrize("group", ["sub", "g/h", None])
def test_a_zarr_format_other_than_the_hierarchy_s_is_refused(
    tmp_path: Path, stored: int, given: int, group: str | None
) -> None:
    path = tmp_path / "s.zarr"
    _root(path, stored)
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    with pytest.raises(MetadataError, match=rf"zarr_format={given}.*'/'.* is Zarr v{stored}"):
        to_zarr(ds, path, group=group, mode="a", zarr_format=given)
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before  # nothing written


def test_the_format_given_is_taken_where_it_matches_or_nothing_is_there(tmp_path: Path) -> None:
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    _root(tmp_path / "v2.zarr", 2)
    to_zarr(ds, tmp_path / "v2.zarr", group="sub", mode="a", zarr_format=2)
    assert (tmp_path / "v2.zarr" / "sub" / "a" / ".zarray").exists()
    to_zarr(ds, tmp_path / "new.zarr", group="sub", zarr_format=2)
    assert (tmp_path / "new.zarr" / ".zgroup").exists()
    to_zarr(ds, tmp_path / "default.zarr", group="sub")
    assert (tmp_path / "default.zarr" / "sub" / "a" / "zarr.json").exists()


def test_mode_w_at_the_root_replaces_a_v2_group_with_the_default_format(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    _root(path, 2)
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    to_zarr(ds, path, mode="w")  # nothing above it: zarr-python's default, as xarray
    assert (path / "a" / "zarr.json").exists()
    assert not (path / ".zgroup").exists()
    for got in _both(path):
        xr.testing.assert_identical(got, ds)


# -- StringDType variables as Zarr v2 ------------------------------------------------------


def _strings() -> xr.Dataset:
    return xr.Dataset({"s": ("x", np.array(["a", "bcd", ""], dtype=object))})


def _opened(tmp_path: Path, zarr_format: int, **kwargs: Any) -> xr.Dataset:
    """`_strings()` written by xarray in `zarr_format`, read back by xarray's own engine:
    its strings as numpy's `StringDType`, with the stored codecs in their encoding."""
    source = tmp_path / f"source{zarr_format}.zarr"
    theirs(_strings(), source, zarr_format=zarr_format, consolidated=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(source, engine="zarr", consolidated=False, **kwargs)
    assert ds["s"].dtype.kind == "T"
    return ds


@pytest.mark.parametrize("source_format", [2, 3])
@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_a_string_dtype_variable_is_written_to_v2_as_variable_length_strings(
    tmp_path: Path, source_format: int, lazy: bool
) -> None:
    if lazy:
        pytest.importorskip("dask.array")
    ds = _opened(tmp_path, source_format, **({"chunks": {}} if lazy else {}))
    path = tmp_path / "s.zarr"
    to_zarr(ds, path, zarr_format=2)
    stored = json.loads((path / "s" / ".zarray").read_text())
    assert stored["dtype"] == "|O"
    assert stored["filters"] == [{"id": "vlen-utf8"}]
    ours, zarrs = _both(path)
    assert ours["s"].values.tolist() == zarrs["s"].values.tolist() == ["a", "bcd", ""]
    assert zarrs["s"].dtype == ds["s"].dtype  # xarray reads it back as it was read
    assert ours["s"].dtype == object  # aiozarr: v2 vlen-utf8 as objects
    longer = xr.Dataset({"s": ("x", np.array(["a much longer string"], dtype=object))})
    to_zarr(longer, path, append_dim="x")  # variable length: no width to outgrow
    assert read(path)["s"].values.tolist() == ["a", "bcd", "", "a much longer string"]


def test_a_string_dtype_variable_without_encoding_is_written_variable_length(
    tmp_path: Path,
) -> None:
    ds = _opened(tmp_path, 3).load().drop_encoding()
    path = tmp_path / "s.zarr"
    to_zarr(ds, path, zarr_format=2)
    assert json.loads((path / "s" / ".zarray").read_text())["dtype"] == "|O"
    xr.testing.assert_identical(read(path), ds)


def test_a_fixed_width_dtype_encoding_of_string_dtype_values_is_kept(tmp_path: Path) -> None:
    ds = _opened(tmp_path, 3).load().drop_encoding()
    path = tmp_path / "s.zarr"
    to_zarr(ds, path, zarr_format=2, encoding={"s": {"dtype": "<U5"}})
    assert json.loads((path / "s" / ".zarray").read_text())["dtype"] == "<U5"
    assert read(path)["s"].values.tolist() == ["a", "bcd", ""]


# -- v3 codecs in an encoding written as Zarr v2 -------------------------------------------


@pytest.mark.parametrize(
    ("compressors", "compressor"),
    [
        ("zstd", {"id": "zstd", "level": 0}),
        ("gzip", {"id": "gzip", "level": 5}),
        ("blosc", {"id": "zstd", "level": 0}),  # no v2 twin: the default
        ("none", None),
    ],
)
def test_a_dataset_read_from_v3_is_written_to_v2_with_its_codecs_twins(
    tmp_path: Path, compressors: str, compressor: Any
) -> None:
    codecs = {
        "zstd": zarr.codecs.ZstdCodec(),
        "gzip": zarr.codecs.GzipCodec(),
        "blosc": zarr.codecs.BloscCodec(),
        "none": None,
    }
    ds = xr.Dataset({"v": ("x", np.arange(4.0)), "s": ("x", np.array(list("abcd"), dtype=object))})
    source, path = tmp_path / "v3.zarr", tmp_path / "v2.zarr"
    encoding = {name: {"compressors": codecs[compressors]} for name in ds}
    theirs(ds, source, zarr_format=3, encoding=encoding, consolidated=False)
    opened = read(source, consolidated=False)  # its encoding: zarr-python's v3 codecs
    to_zarr(opened, path, zarr_format=2)
    for name in ("v", "s"):
        assert json.loads((path / name / ".zarray").read_text())["compressor"] == compressor
    for got in _both(path):
        assert got["v"].values.tolist() == [0.0, 1.0, 2.0, 3.0]
        assert got["s"].values.tolist() == list("abcd")


@pytest.mark.parametrize("engine", ["zarr", "aiozarr"])
@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_strings_read_from_v2_are_written_to_v3(tmp_path: Path, engine: str, lazy: bool) -> None:
    """A v2 string variable's encoding carries its object codec (`vlen-utf8`) in
    `filters`; a v3 array stores strings with its serializer: the filter is left out.
    aiozarr refused the write ("numcodecs codec 'vlen-utf8' has no Zarr v3 codec"),
    naming no variable, though it wrote the dataset's numbers as v3."""
    if lazy:
        pytest.importorskip("dask.array")
    source, path = tmp_path / "v2.zarr", tmp_path / "v3.zarr"
    ds = xr.Dataset({"s": ("x", np.array(["a", "bcd", ""], dtype=object)), "v": ("x", [1.0] * 3)})
    theirs(ds, source, zarr_format=2, consolidated=False)
    opened = read(source, engine, consolidated=False, **({"chunks": {}} if lazy else {}))
    assert [f.get_config()["id"] for f in opened["s"].encoding["filters"]] == ["vlen-utf8"]
    to_zarr(opened, path, zarr_format=3)
    stored = json.loads((path / "s" / "zarr.json").read_text())
    assert stored["data_type"] == "string"
    assert stored["codecs"][0]["name"] == "vlen-utf8"
    for got in _both(path):
        assert got["s"].values.tolist() == ["a", "bcd", ""]
        assert got["v"].values.tolist() == [1.0] * 3


# -- a string _FillValue in Zarr v3 --------------------------------------------------------


@pytest.mark.parametrize("kind", ["U", "S", "T", "O"])
def test_a_string_fill_value_v3_cannot_read_back_is_refused(tmp_path: Path, kind: str) -> None:
    """xarray's writer stores a `<U3` or `|S3` variable's `_FillValue` in a v3 array's
    attributes, which its decoder refuses: neither engine opened the group after
    ("Failed to decode fill_value"). Refused before anything is written, naming the
    variable; Zarr v2 stores it as the array's fill value, read back by both."""
    values = np.array(["a", "", "ccc"]).astype(np.dtypes.StringDType() if kind == "T" else kind)
    ds = xr.Dataset({"s": ("x", values), "v": ("x", np.arange(3.0))})
    ds["s"].encoding = {"_FillValue": b"ccc" if kind == "S" else "ccc"}
    path = tmp_path / "s.zarr"
    with pytest.raises(ValueError, match=r"variable 's': its _FillValue .* Zarr v3"):
        to_zarr(ds, path, zarr_format=3)
    assert not path.exists()
    if kind in "US":  # xarray writes it, and then opens nothing
        theirs(ds, tmp_path / "theirs.zarr", zarr_format=3)
        for engine in ("zarr", "aiozarr"):
            with pytest.raises(ValueError, match="Failed to decode fill_value"):
                read(tmp_path / "theirs.zarr", engine)
    to_zarr(ds, path, zarr_format=2)
    ours, zarrs = _both(path)
    assert ours["s"].values.tolist()[:2] == zarrs["s"].values.tolist()[:2]
    assert ours["v"].values.tolist() == [0.0, 1.0, 2.0]
