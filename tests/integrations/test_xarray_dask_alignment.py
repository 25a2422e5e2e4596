"""`to_zarr` refuses dask blocks that would share a chunk before it writes anything: a
refused append leaves the dataset as it was, so a retry appends its rows once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("dask.array")

import aiozarr  # noqa: E402
from aiozarr.dask import OverlappingWriteError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402


def _stored(url: str) -> dict[str, list[float]]:
    group = aiozarr.open_group(url, mode="r")
    return {name: group[name][...].tolist() for name in sorted(group.array_keys())}


def test_a_refused_append_grows_nothing_and_a_retry_appends_once(tmp_path: Path) -> None:
    url = str(tmp_path / "a.zarr")
    first = xr.Dataset({"v": (("t",), np.arange(17.0))}, coords={"t": np.arange(17)})
    to_zarr(first, url, encoding={"v": {"chunks": (4,)}, "t": {"chunks": (4,)}})
    before = _stored(url)
    new = xr.Dataset({"v": (("t",), np.arange(17.0, 20.0))}, coords={"t": np.arange(17, 20)})
    # blocks of 2 and 1 rows: rows 17-18 and 19 both fall in the chunk of rows 16-19
    with pytest.raises(OverlappingWriteError, match="block edge at 19") as refused:
        to_zarr(new.chunk({"t": 2}), url, append_dim="t", mode="a")
    assert "a.zarr" in str(refused.value) and "/v " in str(refused.value)  # store, array
    assert _stored(url) == before
    to_zarr(new.chunk({"t": 3}), url, append_dim="t", mode="a")  # the retry
    after = _stored(url)
    assert after["t"] == list(range(20)) and after["v"] == [float(i) for i in range(20)]


def test_a_refused_new_variable_creates_nothing(tmp_path: Path) -> None:
    url = str(tmp_path / "b.zarr")
    to_zarr(xr.Dataset({"v": (("t",), np.arange(8.0))}), url, encoding={"v": {"chunks": (4,)}})
    before = _stored(url)
    new = xr.Dataset({"w": (("t",), np.arange(8.0))}).chunk({"t": (3, 5)})
    with pytest.raises(OverlappingWriteError, match=r"b\.zarr.*/w "):
        to_zarr(new, url, mode="a", encoding={"w": {"chunks": (4,)}})
    assert _stored(url) == before


def test_a_refused_region_write_writes_nothing(tmp_path: Path) -> None:
    url = str(tmp_path / "c.zarr")
    full = xr.Dataset({"v": (("t",), np.arange(8.0)), "u": (("t",), np.zeros(8))})
    to_zarr(full, url, encoding={"v": {"chunks": (4,)}, "u": {"chunks": (4,)}})
    before = _stored(url)
    # `u` in memory is written at once; `v`'s blocks put an edge at 2, inside a chunk
    part = xr.Dataset({"u": (("t",), np.ones(8)), "v": (("t",), np.ones(8))})
    part["v"] = part["v"].chunk({"t": (2, 6)})
    with pytest.raises(OverlappingWriteError, match="block edge at 2"):
        to_zarr(part, url, region={"t": slice(0, 8)})
    assert _stored(url) == before
