"""A metadata change through a handle whose array another writer created again (other
dtype, chunks, codecs or fill value) is refused and changes nothing: applied to the new
array it mixed the two (an append encoded for the old dtype read back as the new one's
bytes, a shrink deleted the new grid's chunks and then failed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import VersionConflictError

CHANGES: dict[str, Callable[[aiozarr.Array], Any]] = {
    "attributes": lambda arr: arr.update_attributes({"units": "m"}),
    "append": lambda arr: arr.append(np.array([7, 7], dtype="i8")),
    "shrink": lambda arr: arr.resize((4,)),
    "grow": lambda arr: arr.resize((12,)),
}
AGAIN: dict[str, dict[str, Any]] = {
    "dtype": {"dtype": "f8", "chunks": (2,), "fill_value": 0.0},
    "chunks": {"dtype": "i8", "chunks": (3,), "fill_value": 0},
    "fill value": {"dtype": "i8", "chunks": (2,), "fill_value": -1},
    "codecs": {"dtype": "i8", "chunks": (2,), "fill_value": 0, "compressors": None},
    "shards": {"dtype": "i8", "chunks": (1,), "shards": (2,), "fill_value": 0},
}


@pytest.mark.parametrize("again", AGAIN)
@pytest.mark.parametrize("change", CHANGES)
def test_a_change_through_a_handle_of_a_replaced_array_is_refused(
    tmp_path: Path, change: str, again: str
) -> None:
    old = aiozarr.create_array(tmp_path, shape=(9,), chunks=(2,), dtype="i8", fill_value=0)
    new = aiozarr.create_array(tmp_path, shape=(9,), overwrite=True, **AGAIN[again])
    values = np.arange(1, 10).astype(new.dtype)
    new[...] = values
    document = (tmp_path / "zarr.json").read_bytes()
    with pytest.raises(VersionConflictError, match="created the array again"):
        CHANGES[change](old)
    assert (tmp_path / "zarr.json").read_bytes() == document
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path)[...], values)


def test_another_writers_resize_and_attributes_still_land(tmp_path: Path) -> None:
    mine = aiozarr.create_array(tmp_path, shape=(4,), chunks=(2,), dtype="i8", fill_value=0)
    theirs = aiozarr.open_array(tmp_path)
    theirs.resize((6,))
    theirs.update_attributes({"by": "them"})
    mine.append(np.array([7, 7], dtype="i8"))
    again = aiozarr.open_array(tmp_path)
    assert again.shape == (8,) and again.attrs == {"by": "them"}
    np.testing.assert_array_equal(again[6:], [7, 7])


def test_a_rewrite_that_spells_default_codec_settings_out_is_the_same_array(
    tmp_path: Path,
) -> None:
    """TensorStore leaves `index_location` out when it is the default ("end"): its
    resize was taken for another array created in place, and every later change
    through an earlier handle was refused."""
    mine = aiozarr.create_array(
        tmp_path, shape=(8,), chunks=(2,), shards=(4,), dtype="i4", fill_value=0
    )
    document = json.loads((tmp_path / "zarr.json").read_text())
    sharding = document["codecs"][0]["configuration"]
    assert sharding.pop("index_location") == "end"
    document["shape"] = [10]
    (tmp_path / "zarr.json").write_text(json.dumps(document))
    mine.update_attributes({"after": "resize"})
    again = aiozarr.open_array(tmp_path)
    assert again.shape == (10,) and again.attrs == {"after": "resize"}
