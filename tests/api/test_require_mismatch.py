"""`require_array` / `require_group` over a node that is not the one required: an
aiozarr error naming the node, and a `TypeError` as zarr-python's (checked against it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zarr

import aiozarr
from aiozarr import errors

MISMATCHES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "group asked, array there": (lambda g: g.require_group("a"), "'a' of group / is an array"),
    "array asked, group there": (
        lambda g: g.require_array("sub", shape=(4,), dtype="f4"),
        "'sub' of group / is a group",
    ),
    "other shape": (lambda g: g.require_array("a", shape=(5,), dtype="f4"), "array /a has"),
    "other dtype": (lambda g: g.require_array("a", shape=(4,), dtype="i4"), "array /a is"),
    "not exactly": (
        lambda g: g.require_array("a", shape=(4,), dtype="f8", exact=True),
        "array /a is float32",
    ),
}


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_a_mismatch_is_a_type_error_in_both_libraries(tmp_path: Path, case: str) -> None:
    root = aiozarr.create_group(tmp_path / "g.zarr")
    root.create_array("a", shape=(4,), dtype="f4")
    root.create_group("sub")
    call, named = MISMATCHES[case]
    with pytest.raises(errors.NodeTypeError, match=named) as raised:
        call(root)
    assert isinstance(raised.value, TypeError)
    with pytest.raises(TypeError):
        call(zarr.open_group(tmp_path / "g.zarr", mode="r+"))
