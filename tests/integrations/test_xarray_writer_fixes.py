"""`aiozarr.xarray.to_zarr` writing into what is there, against `Dataset.to_zarr`
(zarr-python): strings wider than the stored width, a group below a consolidated root,
new variables in a v2 group, mode "a" creating a group, `missing_value` on append."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

from tests.integrations.xarray_peers import read, theirs  # noqa: E402

from aiozarr.dask import OverlappingWriteError  # noqa: E402
from aiozarr.errors import ValueOutOfRangeError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402
from aiozarr.xarray.encoded_values import StringTooLongError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")


def names(kind: str, *values: str) -> xr.Dataset:
    return xr.Dataset({"name": ("t", np.array(values).astype(kind))})


# -- 1: strings cut to the stored width ---------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("kind", ["U", "S", "O"])
@pytest.mark.parametrize(
    "how",
    [{"append_dim": "t"}, {"mode": "a"}, {"region": {"t": slice(0, 2)}}],
    ids=["append", "overwrite", "region"],
)
def test_a_string_wider_than_the_stored_width_is_refused(
    tmp_path: Path, zarr_format: int, kind: str, how: dict[str, Any]
) -> None:
    path = tmp_path / "s.zarr"
    to_zarr(names("U", "a", "bb"), path, zarr_format=zarr_format)
    with pytest.raises(StringTooLongError, match=r"'name'.*cccccc.*would be cut") as caught:
        to_zarr(names(kind, "cccccc", "d"), path, **how)
    assert isinstance(caught.value, ValueError)  # as xarray's refusal of the append
    assert isinstance(caught.value, ValueOutOfRangeError)
    assert read(path)["name"].values.tolist() == ["a", "bb"]  # nothing written


def test_xarray_refuses_the_wider_append_too(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    to_zarr(names("U", "a", "bb"), path)
    with pytest.raises(ValueError, match="Mismatched dtypes"):
        theirs(names("U", "cccccc"), path, append_dim="t")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_strings_that_fit_the_stored_width_are_written(tmp_path: Path, zarr_format: int) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    to_zarr(names("U", "a", "bb"), ours, zarr_format=zarr_format)
    theirs(names("U", "a", "bb"), ref, zarr_format=zarr_format)
    to_zarr(names("U", "c"), ours, append_dim="t")
    theirs(names("U", "cc"), ref, append_dim="t")  # xarray: the same dtype only
    to_zarr(names("U", "dd"), ours, region={"t": slice(2, 3)})
    theirs(names("U", "dd"), ref, region={"t": slice(2, 3)})
    xr.testing.assert_identical(read(ours), read(ref))


def test_a_dtype_encoding_too_narrow_for_the_strings_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StringTooLongError, match="<U2"):
        to_zarr(names("U", "abc"), tmp_path / "s.zarr", encoding={"name": {"dtype": "<U2"}})


def test_a_dask_backed_string_append_is_checked_block_by_block(tmp_path: Path) -> None:
    pytest.importorskip("dask.array")
    path = tmp_path / "s.zarr"
    to_zarr(names("U", "a", "bb"), path, encoding={"name": {"chunks": (1,)}})
    more = names("U", "c", "dddddd").chunk({"t": 1})
    with pytest.raises(StringTooLongError, match="dddddd"):
        to_zarr(more, path, append_dim="t")


# -- 2: the root's snapshot after a write into a group below it ----------------------------


def _tree(zarr_format: int) -> xr.DataTree:
    return xr.DataTree.from_dict(
        {
            "/": xr.Dataset({"r": ("x", [1.0, 2.0])}),
            "/g": xr.Dataset({"a": ("t", np.arange(3.0))}),
        }
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_append_below_a_consolidated_root_updates_its_snapshot(
    tmp_path: Path, zarr_format: int
) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    for where in (ours, ref):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _tree(zarr_format).to_zarr(where, zarr_format=zarr_format)  # root consolidated
    more = xr.Dataset({"a": ("t", np.arange(3.0, 6.0))})
    to_zarr(more, ours, group="g", append_dim="t")
    theirs(more, ref, group="g", append_dim="t")
    for engine in ("zarr", "aiozarr"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = xr.open_datatree(ours, engine=engine)
            group = xr.open_dataset(ours, engine=engine, group="g")
        assert tree["g"]["a"].values.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], engine
        assert group["a"].values.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], engine
    xr.testing.assert_identical(read(ours, group="g"), read(ref, group="g"))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_new_group_below_a_consolidated_root_is_in_its_snapshot(
    tmp_path: Path, zarr_format: int
) -> None:
    path = tmp_path / "s.zarr"
    to_zarr(xr.Dataset({"r": ("x", [1.0, 2.0])}), path, zarr_format=zarr_format)
    to_zarr(xr.Dataset({"b": ("y", [7, 8, 9])}), path, group="h/deep", zarr_format=zarr_format)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = xr.open_datatree(path, engine="zarr", consolidated=True)
    assert tree["h/deep"]["b"].values.tolist() == [7, 8, 9]
    assert tree["r"].values.tolist() == [1.0, 2.0]


def test_a_root_without_a_snapshot_is_left_without_one(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    to_zarr(xr.Dataset({"r": ("x", [1.0, 2.0])}), path, consolidated=False)
    to_zarr(xr.Dataset({"a": ("t", [1.0])}), path, group="g")
    root = json.loads((path / "zarr.json").read_text())
    assert root.get("consolidated_metadata") is None
    assert "consolidated_metadata" in json.loads((path / "g" / "zarr.json").read_text())


# -- 3: new variables in a v2 group written without zarr_format= ---------------------------


def test_a_new_variable_in_a_v2_group_is_written_as_v2(tmp_path: Path) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    ds = xr.Dataset({"a": ("t", np.arange(4.0))})
    new = xr.Dataset({"new": ("t", np.array([0.5, np.nan, 2.5, 3.5]))})
    to_zarr(ds, ours, zarr_format=2)
    theirs(ds, ref, zarr_format=2)
    to_zarr(new, ours, mode="a")
    theirs(new, ref, mode="a")
    attrs = json.loads((ours / "new" / ".zattrs").read_text())
    assert attrs == {"_ARRAY_DIMENSIONS": ["t"]}
    xr.testing.assert_identical(read(ours), read(ref))
    xr.testing.assert_identical(xr.open_dataset(ours, engine="aiozarr").load(), read(ref))


# -- 4: mode "a" creates a missing group ---------------------------------------------------


@pytest.mark.parametrize("group", [None, "g", "g/h"])
def test_mode_a_creates_a_missing_group(tmp_path: Path, group: str | None) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    ds = xr.Dataset({"a": ("t", np.arange(4.0))})
    if group is not None:  # a store that is there, without the group
        to_zarr(ds, ours)
        theirs(ds, ref)
    to_zarr(ds, ours, group=group, mode="a")
    theirs(ds, ref, group=group, mode="a")
    xr.testing.assert_identical(read(ours, group=group), read(ref, group=group))


def test_an_append_to_a_missing_group_still_fails_as_not_found(tmp_path: Path) -> None:
    ds = xr.Dataset({"a": ("t", np.arange(4.0))})
    with pytest.raises(FileNotFoundError):  # GroupNotFoundError, not an ExceptionGroup
        to_zarr(ds, tmp_path / "s.zarr", append_dim="t")


# -- 5: an append to a variable stored with missing_value ----------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_append_keeps_the_stored_missing_value(tmp_path: Path, zarr_format: int) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    ds = xr.Dataset({"v": ("t", np.array([1.0, np.nan]))})
    more = xr.Dataset({"v": ("t", np.array([np.nan, 3.0]))})
    encoding = {"v": {"dtype": "int16", "missing_value": -99}}
    to_zarr(ds, ours, encoding=encoding, zarr_format=zarr_format)
    theirs(ds, ref, encoding=encoding, zarr_format=zarr_format)
    to_zarr(more, ours, append_dim="t")
    theirs(more, ref, append_dim="t")
    np.testing.assert_array_equal(read(ours)["v"].values, [1.0, np.nan, np.nan, 3.0])
    xr.testing.assert_identical(read(ours), read(ref))


def test_a_dask_append_starting_inside_a_chunk_is_written_as_xarray_writes_it(
    tmp_path: Path,
) -> None:
    """xarray lets an append (mode "a") start inside a stored chunk: its first block
    completes that chunk, the only writer of it; "r+" region writes refuse it, as
    xarray's."""
    full = xr.Dataset({"a": ("t", np.arange(20.0))}, coords={"t": np.arange(20)})
    encoding = {"a": {"chunks": (4,)}, "t": {"chunks": (4,)}}
    for where, write in (("ours.zarr", to_zarr), ("theirs.zarr", None)):
        full.isel(t=slice(0, 10)).to_zarr(tmp_path / where, encoding=encoding)
        tail = full.isel(t=slice(10, 20)).chunk({"t": (2, 4, 4)})
        if write is None:
            tail.to_zarr(tmp_path / where, append_dim="t")
        else:
            write(tail, tmp_path / where, append_dim="t")
    ours = xr.open_dataset(tmp_path / "ours.zarr", engine="zarr").load()
    xr.testing.assert_identical(
        ours, xr.open_dataset(tmp_path / "theirs.zarr", engine="zarr").load()
    )
    xr.testing.assert_identical(ours, full)
    inside = (full + 100).isel(t=slice(2, 10)).chunk({"t": 4})
    with pytest.raises(OverlappingWriteError, match="region starts at 2"):
        to_zarr(inside[["a"]].drop_vars("t"), tmp_path / "ours.zarr", region={"t": slice(2, 10)})


# -- 6: a variable given with its stored dimensions in another order -----------------------


def _grid(rows: range) -> xr.Dataset:
    values = np.arange(len(rows) * 3.0).reshape(len(rows), 3) + rows.start * 10
    return xr.Dataset({"v": (("t", "y"), values)}, coords={"t": list(rows), "y": [0, 1, 2]})


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(
    ("later", "how"),
    [
        (lambda: _grid(range(4, 6)), {"append_dim": "t"}),
        (lambda: _grid(range(0, 4)) * 2, {"mode": "a"}),
        (lambda: _grid(range(2, 4)).drop_vars("y"), {"region": "auto"}),
        (
            lambda: _grid(range(0, 2)).chunk({"t": 2}).drop_vars(["t", "y"]),
            {"region": {"t": slice(0, 2)}},
        ),
    ],
    ids=["append", "mode-a", "region-auto", "region-dask"],
)
def test_transposed_dimensions_are_written_in_the_stored_order(
    tmp_path: Path, zarr_format: int, later: Any, how: dict[str, Any]
) -> None:
    """xarray's `to_zarr` transposes a variable whose dimensions are the stored array's in
    another order; aiozarr refused it ("has dimensions ('y', 't'), the stored one")."""
    encoding = {"v": {"chunks": (2, 3)}}
    for where, write in (("ours.zarr", to_zarr), ("theirs.zarr", theirs)):
        write(_grid(range(0, 4)), tmp_path / where, zarr_format=zarr_format, encoding=encoding)
        write(later().transpose("y", "t"), tmp_path / where, **how)
    ours = read(tmp_path / "ours.zarr")
    xr.testing.assert_identical(ours, read(tmp_path / "theirs.zarr"))
    assert ours["v"].dims == ("t", "y")


# -- 7: signed values stored as unsigned integers (`_Unsigned="false"`) in Zarr v2 ---------


def _signed(values: list[float]) -> xr.Dataset:
    return xr.Dataset({"f": ("t", np.array(values))}, coords={"t": np.arange(len(values))})


@pytest.mark.filterwarnings("ignore:variable 'f' will be stored as unsigned")
def test_signed_values_in_unsigned_v2_integers_are_written_as_xarray_writes_them(
    tmp_path: Path,
) -> None:
    """v2 stores the `_FillValue` as the array's `fill_value`, read back as a uint8 255
    that `_Unsigned="false"` takes as int8 -1; the check decoded a Python 255, which
    overflows int8, and refused the write ("its values do not read back from uint8")."""
    encoding = {"f": {"dtype": "uint8", "_Unsigned": "false", "_FillValue": -1}}
    for where, write in (("ours.zarr", to_zarr), ("theirs.zarr", theirs)):
        write(_signed([1.0, -100.0, np.nan]), tmp_path / where, zarr_format=2, encoding=encoding)
        write(_signed([np.nan, -128.0]).assign_coords(t=[3, 4]), tmp_path / where, append_dim="t")
    for engine in ("zarr", "aiozarr"):
        ours = read(tmp_path / "ours.zarr", engine)
        xr.testing.assert_identical(ours, read(tmp_path / "theirs.zarr", engine))
        np.testing.assert_array_equal(ours["f"].values, [1.0, -100.0, np.nan, np.nan, -128.0])


@pytest.mark.filterwarnings("ignore:variable 'f' will be stored as unsigned")
def test_signed_values_in_unsigned_v3_integers_are_still_refused(tmp_path: Path) -> None:
    """v3 keeps the `_FillValue` as an attribute, which xarray decodes as a Python 255:
    neither engine would open the array (xarray's own writer fails on it)."""
    encoding = {"f": {"dtype": "uint8", "_Unsigned": "false", "_FillValue": -1}}
    with pytest.raises(ValueOutOfRangeError, match="'f'"):
        to_zarr(
            _signed([1.0, -100.0, np.nan]), tmp_path / "s.zarr", zarr_format=3, encoding=encoding
        )
