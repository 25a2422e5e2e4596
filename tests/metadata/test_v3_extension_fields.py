"""Fields of a v3 `zarr.json` a reader may ignore (`"must_understand": false`): kept in
the model and written back unchanged, as zarr-python 3.4 does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import aiozarr
from aiozarr.errors import MetadataError
from aiozarr.metadata import v3

EXTENSION = {"must_understand": False, "x": [1, {"y": None}]}
ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [4],
    "data_type": "float32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default"},
    "fill_value": 0,
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "my_extension": EXTENSION,
}
GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {}, "my_extension": EXTENSION}


def test_an_arrays_extension_fields_are_kept_and_written_back() -> None:
    meta = v3.parse_array(json.dumps(ARRAY), "a/zarr.json")
    assert meta.extra == {"my_extension": EXTENSION}
    assert json.loads(v3.array_to_json(meta))["my_extension"] == EXTENSION


def test_a_groups_extension_fields_are_kept_and_written_back() -> None:
    meta = v3.parse_group(json.dumps(GROUP), "g/zarr.json")
    assert meta.extra == {"my_extension": EXTENSION}
    assert json.loads(v3.group_to_json(meta))["my_extension"] == EXTENSION


def test_a_field_that_must_be_understood_is_still_refused() -> None:
    doc = {**ARRAY, "my_extension": {"must_understand": True}}
    with pytest.raises(MetadataError, match="my_extension"):
        v3.parse_array(json.dumps(doc), "a/zarr.json")


@pytest.mark.parametrize("doc", [ARRAY, GROUP], ids=["array", "group"])
def test_an_attributes_update_keeps_extension_fields(tmp_path: Path, doc: dict[str, Any]) -> None:
    (tmp_path / "zarr.json").write_text(json.dumps(doc))
    node = aiozarr.open(str(tmp_path))
    node.attrs["k"] = 1
    written = json.loads((tmp_path / "zarr.json").read_text())
    assert written["my_extension"] == EXTENSION
    assert written["attributes"] == {"k": 1}
