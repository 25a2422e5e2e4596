"""A missing array or group raises `NodeNotFoundError`: a `KeyError` and a `FileNotFoundError`."""

from __future__ import annotations

from pathlib import Path

import pytest

import aiozarr
from aiozarr.errors import NodeNotFoundError


@pytest.mark.parametrize(
    "open_missing",
    [
        lambda root: aiozarr.open_array(root, "missing", mode="r"),
        lambda root: aiozarr.open_group(root, "missing", mode="r"),
        lambda root: aiozarr.open(root, "missing", mode="r"),
        lambda root: aiozarr.open_group(root)["missing"],
    ],
    ids=["open_array", "open_group", "open", "group-member"],
)
def test_missing_nodes_are_file_not_found_and_key_errors(tmp_path: Path, open_missing) -> None:
    root = str(tmp_path / "data.zarr")
    aiozarr.create_group(root)
    with pytest.raises(FileNotFoundError) as info:
        open_missing(root)
    assert isinstance(info.value, NodeNotFoundError) and isinstance(info.value, KeyError)
    assert "missing" in str(info.value)
