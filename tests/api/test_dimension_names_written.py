"""`create_array(dimension_names=...)` takes what a reader takes: strings or None, one
per dimension (any iterable of them, a string too, as zarr-python 3 takes it). Other
names were written as they came (`[1, 2]`), and the array then failed to open in aiozarr,
zarr-python and TensorStore alike; zarr-python refuses them at creation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aiozarr
from aiozarr.errors import MetadataError


@pytest.mark.parametrize(
    ("names", "match"),
    [
        ([1, 2], "a list of strings or nulls"),
        ([b"x", "y"], "a list of strings or nulls"),
        (["x", {"y": 1}], "a list of strings or nulls"),
        (["x"], "2 names"),
    ],
)
def test_names_no_reader_takes_are_refused(tmp_path: Path, names: Any, match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        aiozarr.create_array(str(tmp_path), shape=(2, 3), dtype="i4", dimension_names=names)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("names", "stored"),
    [(["x", None], ("x", None)), (("a", "b"), ("a", "b")), ("xy", ("x", "y")), (None, None)],
)
def test_names_readers_take_are_written(tmp_path: Path, names: Any, stored: Any) -> None:
    aiozarr.create_array(str(tmp_path), shape=(2, 3), dtype="i4", dimension_names=names)
    assert aiozarr.open_array(str(tmp_path)).metadata.dimension_names == stored


def test_a_v2_array_refuses_names_it_cannot_store(tmp_path: Path) -> None:
    """A v2 array has no dimension names: they were dropped without a word (zarr-python
    refuses them: "Zarr format 2 arrays do not support dimension names")."""
    with pytest.raises(MetadataError, match="a Zarr v2 array stores none"):
        aiozarr.create_array(
            str(tmp_path), shape=(2, 3), dtype="i4", zarr_format=2, dimension_names=["x", "y"]
        )
    assert list(tmp_path.iterdir()) == []
    aiozarr.create_array(str(tmp_path), shape=(2,), dtype="i4", zarr_format=2, dimension_names=None)
