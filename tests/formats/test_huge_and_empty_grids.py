"""What zarr-python writes at the edges of a grid, read here: a chunk edge of 0 along an
axis of length 0 (zarr-python writes and reads `chunk_shape: [0]` for `shape: [0]`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zarr

import aiozarr
from aiozarr.errors import MetadataError


def test_a_chunk_edge_of_0_on_an_empty_axis_from_zarr_python_reads_and_grows(
    tmp_path: Path,
) -> None:
    # zarr-python 3.1 wrote chunks=(0,) as given; 3.4 refuses it: the document is edited
    zarr.create_array(store=str(tmp_path / "z"), shape=(0,), chunks=(1,), dtype="i2")
    document = json.loads((tmp_path / "z" / "zarr.json").read_text())
    document["chunk_grid"]["configuration"]["chunk_shape"] = [0]
    (tmp_path / "z" / "zarr.json").write_text(json.dumps(document))
    arr = aiozarr.open_array(tmp_path / "z")
    assert (arr.shape, arr.chunks, arr[:].tolist()) == ((0,), (1,), [])
    arr.resize((3,))
    arr[:] = [1, 2, 3]
    assert zarr.open_array(str(tmp_path / "z"), mode="r")[:].tolist() == [1, 2, 3]


def test_a_chunk_edge_of_0_on_an_axis_with_elements_is_refused(tmp_path: Path) -> None:
    zarr.create_array(store=str(tmp_path / "z"), shape=(5,), chunks=(2,), dtype="i2")
    document = json.loads((tmp_path / "z" / "zarr.json").read_text())
    document["chunk_grid"]["configuration"]["chunk_shape"] = [0]
    (tmp_path / "z" / "zarr.json").write_text(json.dumps(document))
    with pytest.raises(MetadataError, match=r"0 only along an axis of length 0"):
        aiozarr.open_array(tmp_path / "z")
