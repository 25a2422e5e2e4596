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


# (start, stop, dask block length) of a region write into 10 rows in chunks of 4
_REGIONS = [
    (0, 4, 4),  # one whole chunk
    (4, 10, 4),  # up to the array's end, in its last, shorter chunk
    (0, 6, 4),  # ends at 6, inside the chunk 4:8 the writer of 6:10 shares
    (4, 7, 3),  # the same, in one block
    (8, 9, 1),  # ends inside the last chunk, before the array's end
    (2, 4, 2),  # starts inside a chunk
]


@pytest.mark.parametrize("safe_chunks", [True, False])
@pytest.mark.parametrize(("start", "stop", "block"), _REGIONS)
def test_a_region_write_is_refused_where_xarrays_engine_refuses_it(
    tmp_path: Path, start: int, stop: int, block: int, safe_chunks: bool
) -> None:
    """A region in mode "r+" must end on a chunk boundary or at the array's end, as it
    must start on one: a region ending inside a chunk shares it with the next region's
    writer. Only the start was checked."""
    full = xr.Dataset({"v": (("t",), np.zeros(10))})
    part = xr.Dataset({"v": (("t",), np.arange(start, stop, dtype="f8"))}).chunk({"t": block})
    refused = []
    for name in ("xarray", "aiozarr"):
        url = str(tmp_path / f"{name}.zarr")
        full.to_zarr(url, encoding={"v": {"chunks": (4,)}}, zarr_format=3, consolidated=False)
        options = {"region": {"t": slice(start, stop)}, "safe_chunks": safe_chunks}
        try:
            if name == "xarray":
                part.to_zarr(url, consolidated=False, **options)
            else:
                to_zarr(part, url, **options)
            refused.append(False)
        except ValueError:
            refused.append(True)
    assert refused[0] == refused[1]
    assert refused[1] == (safe_chunks and (start % 4 != 0 or stop not in (4, 8, 10)))


def test_a_region_ending_inside_a_chunk_names_the_variable_region_and_boundary(
    tmp_path: Path,
) -> None:
    url = str(tmp_path / "d.zarr")
    to_zarr(xr.Dataset({"v": (("t",), np.zeros(10))}), url, encoding={"v": {"chunks": (4,)}})
    part = xr.Dataset({"v": (("t",), np.ones(6))}).chunk({"t": 4})
    with pytest.raises(OverlappingWriteError, match=r"ends at 6 on axis 0, .*/v .*\[0:6\]"):
        to_zarr(part, url, region={"t": slice(0, 6)})
    with pytest.raises(OverlappingWriteError, match="boundaries are 4 and 8"):
        to_zarr(part, url, region={"t": slice(0, 6)})
    to_zarr(part, url, region={"t": slice(0, 6)}, mode="a")  # mode "a": the edge shared
    assert _stored(url)["v"] == [1.0] * 6 + [0.0] * 4
