"""A document that cannot be written as JSON names the key it would have been stored
at (`g/x/zarr.json`, `g/x/.zattrs`), as every metadata error does; it said `metadata`
(v3) or `.zattrs` (v2), without the node's path."""

from __future__ import annotations

from pathlib import Path

import pytest

import aiozarr
from aiozarr.errors import MetadataError

_KEY = {2: ".zattrs", 3: "zarr.json"}
_BAD = {"a": {1}}  # a set: no JSON value


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_create_names_the_document(tmp_path: Path, zarr_format: int) -> None:
    with pytest.raises(MetadataError, match=f"^g/x/{_KEY[zarr_format]}: cannot write as JSON"):
        aiozarr.create_array(
            str(tmp_path), "g/x", shape=(2,), dtype="i4", zarr_format=zarr_format, attributes=_BAD
        )
    with pytest.raises(MetadataError, match=f"^g/y/{_KEY[zarr_format]}: cannot write as JSON"):
        aiozarr.create_group(str(tmp_path), "g/y", zarr_format=zarr_format, attributes=_BAD)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_update_names_the_document(tmp_path: Path, zarr_format: int) -> None:
    group = aiozarr.create_group(str(tmp_path), "g", zarr_format=zarr_format)
    with pytest.raises(MetadataError, match=f"^g/{_KEY[zarr_format]}: cannot write as JSON"):
        group.update_attributes({"b": {2}})
