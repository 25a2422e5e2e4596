"""`attrs` hands out a copy, nested values included: changing a list or dict read from it
(`arr.attrs["l"].append(3)`, a notebook's habit) changes nothing else. A shallow copy
shared the nested values with the handle's metadata: the handle, and every handle
opened later from the same group's consolidated metadata, then showed a value that
was never stored."""

from __future__ import annotations

from pathlib import Path

import aiozarr
from aiozarr.storage.backends.local import LocalStore


def _group(path: Path) -> aiozarr.Group:
    root = aiozarr.create_group(LocalStore(path), attributes={"l": [1]})
    root.create_array("a", shape=(4,), dtype="i4", attributes={"l": [1, 2], "d": {"n": 1}})
    aiozarr.consolidate_metadata(LocalStore(path))
    return aiozarr.open_group(LocalStore(path))


def test_a_nested_value_changed_in_place_is_not_shown_as_stored(tmp_path: Path) -> None:
    group = _group(tmp_path)
    array = group["a"]
    array.attrs["l"].append(3)
    array.attrs["d"]["n"] = 99
    group.attrs["l"].append(9)
    assert array.attrs.asdict() == {"l": [1, 2], "d": {"n": 1}}
    assert group["a"].attrs.asdict() == {"l": [1, 2], "d": {"n": 1}}  # the snapshot's copy
    assert group.attrs.asdict() == {"l": [1]}
    assert array.async_array.attrs == {"l": [1, 2], "d": {"n": 1}}


def test_changes_stored_through_attrs_are_shown(tmp_path: Path) -> None:
    array = _group(tmp_path)["a"]
    listed = array.attrs["l"]
    listed.append(3)
    array.attrs["l"] = listed
    assert array.attrs["l"] == [1, 2, 3]
    assert aiozarr.open_array(LocalStore(tmp_path), "a").attrs["l"] == [1, 2, 3]
