"""Object arrays with a fill value, end to end: items equal to the fill are stored and
read back as written, a JSON list fill is each unwritten element's value, and a bytes
or str fill ending in NUL keeps it in partly written chunks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

import aiozarr


def objects(*items: object) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def v2_object_array(path: Path, filters: list[dict[str, Any]], fill: Any) -> str:
    path.mkdir()
    doc = {
        "zarr_format": 2,
        "shape": [4],
        "chunks": [2],
        "dtype": "|O",
        "fill_value": fill,
        "order": "C",
        "filters": filters,
        "compressor": None,
    }
    (path / ".zarray").write_text(json.dumps(doc))
    return str(path)


def test_json_items_equal_to_the_fill_read_back_as_written(tmp_path: Path) -> None:
    path = v2_object_array(tmp_path / "a", [numcodecs.JSON().get_config()], 0)
    aiozarr.open_array(path)[0:2] = objects(False, 0.0)
    got = aiozarr.open_array(path)[0:2].tolist()
    assert got == [False, 0.0]
    assert [type(v) for v in got] == [bool, float]


def test_array_items_are_written_whatever_the_fill(tmp_path: Path) -> None:
    path = v2_object_array(tmp_path / "a", [{"id": "vlen-array", "dtype": "<i4"}], 0)
    arr = aiozarr.open_array(path)
    arr[0:2] = objects(np.array([0], "i4"), np.array([0], "i4"))
    arr[2:4] = objects(np.array([1, 2], "i4"), np.array([3], "i4"))
    got = aiozarr.open_array(path)[:]
    assert [v.tolist() for v in got] == [[0], [0], [1, 2], [3]]


@pytest.mark.parametrize("selection", [slice(0, 1), slice(0, 2), slice(0, 3), slice(None)])
def test_a_list_fill_is_each_unwritten_elements_value(tmp_path: Path, selection: slice) -> None:
    path = v2_object_array(tmp_path / "a", [numcodecs.JSON().get_config()], [1, 2])
    arr = aiozarr.open_array(path)
    assert arr[selection].tolist() == [[1, 2]] * len(range(4)[selection])
    assert arr[0] == [1, 2]
    arr[0:1] = objects("x")  # a partly written chunk keeps the fill in the rest
    assert aiozarr.open_array(path)[:].tolist() == ["x", [1, 2], [1, 2], [1, 2]]


def test_a_bytes_fill_ending_in_nul_keeps_it(tmp_path: Path) -> None:
    arr = aiozarr.create_array(
        str(tmp_path / "b"),
        shape=(4,),
        chunks=(2,),
        dtype=object,
        serializer={"name": "vlen-bytes"},
        fill_value=b"q\x00",
    )
    arr[0:1] = objects(b"z")
    assert aiozarr.open_array(str(tmp_path / "b"))[:].tolist() == [b"z", b"q\x00"] + [b"q\x00"] * 2


def test_a_str_fill_ending_in_nul_keeps_it(tmp_path: Path) -> None:
    arr = aiozarr.create_array(
        str(tmp_path / "s"), shape=(4,), chunks=(2,), dtype=str, fill_value="a\x00"
    )
    arr[0:1] = np.array(["z"], dtype=object)
    assert aiozarr.open_array(str(tmp_path / "s"))[:].tolist() == ["z", "a\x00", "a\x00", "a\x00"]


def test_a_bytes_fill_ending_in_nul_keeps_it_in_a_shard(tmp_path: Path) -> None:
    """Inner chunks never written of a stored shard read as the fill, NUL included."""
    path = str(tmp_path / "sharded")
    arr = aiozarr.create_array(
        path,
        shape=(8,),
        chunks=(2,),
        shards=(8,),
        dtype=object,
        serializer={"name": "vlen-bytes"},
        fill_value=b"q\x00",
    )
    arr[0:1] = objects(b"z")
    assert aiozarr.open_array(path)[:].tolist() == [b"z"] + [b"q\x00"] * 7
