"""`copy(..., zarr_format=...)` of object arrays across formats: variable-length bytes
stay bytes (v2 `vlen-bytes` <-> v3 `variable_length_bytes`), and an object codec with no
twin in the target format is refused before anything is created."""

from __future__ import annotations

import json
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import aiozarr
from aiozarr.errors import UnsupportedError
from aiozarr.metadata import conversions

ITEMS = [b"a\x00", b"", b"\xff\xfe"]  # the last is not UTF-8


def objects(*items: object) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def test_v3_bytes_copied_to_v2_stay_bytes(tmp_path: Path) -> None:
    src = aiozarr.create_array(
        str(tmp_path / "src"),
        shape=(3,),
        chunks=(2,),
        dtype=object,
        serializer={"name": "vlen-bytes"},
        fill_value=b"",
    )
    src[:] = objects(*ITEMS)
    aiozarr.copy(str(tmp_path / "src"), str(tmp_path / "dst"), zarr_format=2)
    doc = json.loads((tmp_path / "dst" / ".zarray").read_text())
    assert doc["filters"] == [{"id": "vlen-bytes"}]
    assert aiozarr.open_array(str(tmp_path / "dst"))[:].tolist() == ITEMS


def test_v2_bytes_copied_to_v3_stay_bytes(tmp_path: Path) -> None:
    src = aiozarr.create_array(
        str(tmp_path / "src"),
        shape=(3,),
        chunks=(2,),
        dtype=object,
        filters=[numcodecs.VLenBytes()],
        zarr_format=2,
    )
    src[:] = objects(*ITEMS)
    aiozarr.copy(str(tmp_path / "src"), str(tmp_path / "dst"), zarr_format=3)
    doc = json.loads((tmp_path / "dst" / "zarr.json").read_text())
    assert doc["data_type"] == "variable_length_bytes"
    assert doc["codecs"][0]["name"] == "vlen-bytes"
    assert aiozarr.open_array(str(tmp_path / "dst"))[:].tolist() == ITEMS


def test_v2_strings_copied_to_v3_stay_strings(tmp_path: Path) -> None:
    src = aiozarr.create_array(str(tmp_path / "src"), shape=(2,), dtype=str, zarr_format=2)
    src[:] = np.array(["a", "b"], dtype=object)
    aiozarr.copy(str(tmp_path / "src"), str(tmp_path / "dst"), zarr_format=3)
    doc = json.loads((tmp_path / "dst" / "zarr.json").read_text())
    assert doc["data_type"] == "string"
    assert aiozarr.open_array(str(tmp_path / "dst"))[:].tolist() == ["a", "b"]


@pytest.mark.parametrize(
    ("codec", "items"),
    [
        (numcodecs.JSON(), ["s", 1, [2]]),
        (numcodecs.JSON(), ["a", "b", "c"]),
        (numcodecs.VLenArray("<i4"), [np.arange(2, dtype="i4")] * 3),
    ],
)
def test_object_codecs_without_a_v3_twin_are_refused_before_anything_is_created(
    tmp_path: Path, codec: numcodecs.abc.Codec, items: list[object]
) -> None:
    src = aiozarr.create_array(
        str(tmp_path / "src"), shape=(3,), chunks=(2,), dtype=object, filters=[codec], zarr_format=2
    )
    src[:] = objects(*items)
    with pytest.raises(UnsupportedError, match=codec.codec_id):
        aiozarr.copy(str(tmp_path / "src"), str(tmp_path / "dst"), zarr_format=3)
    assert not (tmp_path / "dst").exists()


def test_create_options_name_the_array_they_refuse(tmp_path: Path) -> None:
    src = aiozarr.create_array(
        str(tmp_path / "src"), shape=(1,), dtype=object, filters=[numcodecs.JSON()], zarr_format=2
    )
    with pytest.raises(UnsupportedError, match=r"^/x/y: object array encoded with"):
        conversions.create_options(src.metadata, 3, sharded=False, where="/x/y")


@pytest.mark.parametrize(("fill", "wanted"), [(0, b""), (None, None), ("cQ==", b"q")])
def test_a_v2_bytes_fill_becomes_a_v3_bytes_fill(
    tmp_path: Path, fill: object, wanted: bytes | None
) -> None:
    """zarr-python 2 wrote 0 for every object array; null is v2's "none" (creation's
    default then)."""
    path = tmp_path / "src"
    path.mkdir()
    doc = {
        "zarr_format": 2,
        "shape": [2],
        "chunks": [2],
        "dtype": "|O",
        "fill_value": fill,
        "order": "C",
        "filters": [{"id": "vlen-bytes"}],
        "compressor": None,
    }
    (path / ".zarray").write_text(json.dumps(doc))
    options = conversions.create_options(aiozarr.open_array(str(path)).metadata, 3, sharded=False)
    assert options["serializer"] == {"name": "vlen-bytes"}
    assert options["fill_value"] == wanted


def test_a_group_with_an_array_without_a_v3_twin_is_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    group = aiozarr.create_group(str(tmp_path / "src"), zarr_format=2)
    group.create_array("fine", shape=(1,), dtype="i4")
    group.create_array("json", shape=(1,), dtype=object, filters=[numcodecs.JSON()])
    with pytest.raises(UnsupportedError, match="/json: object array encoded with"):
        aiozarr.copy(str(tmp_path / "src"), str(tmp_path / "dst"), zarr_format=3)
    assert not (tmp_path / "dst").exists()
