"""Rectilinear arrays through the tools: dask blocks, copy, `info` / `tree`, xarray."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.cli import info as info_cli
from aiozarr.cli import tree as tree_cli
from aiozarr.errors import MetadataError
from aiozarr.tools.copying import copy

SHAPE = (10, 7)
EDGES = [[3, 5, 4], [2, 2, 2, 1]]
DATA = np.arange(70, dtype="<f8").reshape(SHAPE)


def rectilinear(where: Path, **options: object) -> aiozarr.Array:
    options.setdefault("chunks", EDGES)
    arr = aiozarr.create_array(where, shape=SHAPE, dtype="<f8", **options)
    arr[...] = DATA
    return arr


def test_to_dask_blocks_are_the_grid_chunks(tmp_path: Path) -> None:
    da = pytest.importorskip("dask.array")
    from aiozarr.dask import OverlappingWriteError, store, to_dask, write_grid

    arr = rectilinear(tmp_path / "a.zarr")
    blocks = to_dask(arr)
    assert blocks.chunks == ((3, 5, 2), (2, 2, 2, 1))
    assert write_grid(arr) == blocks.chunks
    np.testing.assert_array_equal(blocks.compute(), DATA)
    np.testing.assert_array_equal((blocks[2:9, 1] * 2).compute(), DATA[2:9, 1] * 2)

    target = aiozarr.create_array(tmp_path / "b.zarr", shape=SHAPE, dtype="<f8", chunks=EDGES)
    store(da.from_array(DATA, chunks=((3, 5, 2), (4, 3))), target)  # block edges on chunk edges
    np.testing.assert_array_equal(target[...], DATA)
    with pytest.raises(OverlappingWriteError, match="block edge at 4"):
        store(da.from_array(DATA, chunks=((4, 6), (7,))), target)
    with pytest.raises(OverlappingWriteError, match="region starts at 1"):
        store(da.from_array(DATA[1:8], chunks=(7, 7)), target, region=(slice(1, 8), slice(None)))
    store(da.from_array(DATA[3:8], chunks=(5, 7)), target, region=(slice(3, 8), slice(None)))


def test_sharded_to_dask_blocks_are_shards(tmp_path: Path) -> None:
    pytest.importorskip("dask.array")
    from aiozarr.dask import to_dask

    arr = rectilinear(tmp_path / "s.zarr", chunks=(2, 7), shards=[[4, 6, 2], [7]])
    assert to_dask(arr).chunks == ((4, 6), (7,))
    np.testing.assert_array_equal(to_dask(arr).compute(), DATA)


def test_copy_keeps_the_grid_and_converting_to_v2_is_refused(tmp_path: Path) -> None:
    rectilinear(tmp_path / "a.zarr")
    copy(tmp_path / "a.zarr", tmp_path / "b.zarr")  # metadata kept as it is
    copy(tmp_path / "a.zarr", tmp_path / "c.zarr", codec="gzip:1")  # options rebuilt
    for name in ("b.zarr", "c.zarr"):
        out = aiozarr.open_array(tmp_path / name)
        assert out.metadata.chunk_grid is not None
        assert out.metadata.chunk_grid.edges == ((3, 5, 4), (2, 2, 2, 1))
        np.testing.assert_array_equal(out[...], DATA)
    assert aiozarr.open_array(tmp_path / "c.zarr").metadata.codecs[-1].name == "gzip"
    copy(tmp_path / "a.zarr", tmp_path / "d.zarr", chunks=(5, 5))  # regrid to regular
    assert aiozarr.open_array(tmp_path / "d.zarr").chunks == (5, 5)
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "d.zarr")[...], DATA)
    with pytest.raises(MetadataError, match="needs zarr_format=3"):
        copy(tmp_path / "a.zarr", tmp_path / "e.zarr", zarr_format=2)


def test_copy_of_a_sharded_rectilinear_array(tmp_path: Path) -> None:
    rectilinear(tmp_path / "s.zarr", chunks=(2, 7), shards=[[4, 6, 2], [7]])
    copy(tmp_path / "s.zarr", tmp_path / "t.zarr", codec="zstd:3")
    out = aiozarr.open_array(tmp_path / "t.zarr")
    assert out.write_chunk_sizes == ((4, 6), (7,)) and out.chunks == (2, 7)
    np.testing.assert_array_equal(out[...], DATA)


def test_info_and_tree_show_the_edges(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rectilinear(tmp_path / "a.zarr")
    assert info_cli.main([str(tmp_path / "a.zarr"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["chunk_grid"] == "rectilinear"
    assert shown["chunks"] == [[3, 5, 2], [2, 2, 2, 1]] and shown["shards"] is None
    assert shown["grid"] == [3, 4]
    assert info_cli.main([str(tmp_path / "a.zarr")]) == 0
    assert "(3, 4) = 12 chunks" in capsys.readouterr().out
    assert tree_cli.main([str(tmp_path / "a.zarr"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks"] == [[3, 5, 2], [2, 2, 2, 1]]


def test_xarray_prefers_the_grid_chunks_and_writes_it_back(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    from aiozarr.xarray import to_zarr

    root = aiozarr.create_group(tmp_path / "ds.zarr")
    arr = root.create_array("v", shape=SHAPE, dtype="<f8", chunks=EDGES, dimension_names=["y", "x"])
    arr[...] = DATA
    ds = xr.open_dataset(tmp_path / "ds.zarr", engine="aiozarr", consolidated=False)
    # a regular dimension of the grid as its chunk size, as xarray's zarr engine gives it
    assert ds["v"].encoding["preferred_chunks"] == {"y": (3, 5, 2), "x": 2}
    chunked = xr.open_dataset(tmp_path / "ds.zarr", engine="aiozarr", chunks={}, consolidated=False)
    assert chunked["v"].chunks == ((3, 5, 2), (2, 2, 2, 1))
    to_zarr(ds, tmp_path / "copy.zarr")
    again = aiozarr.open_array(tmp_path / "copy.zarr", "v")
    # the same chunks inside the array (x's regular step may reach past its end)
    assert again.write_chunk_sizes == arr.write_chunk_sizes == ((3, 5, 2), (2, 2, 2, 1))
    np.testing.assert_array_equal(again[...], DATA)
