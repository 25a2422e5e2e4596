"""aiozarr's async API runs on asyncio: driven by anything else (trio, a coroutine run by
hand), its entry points raise `UnsupportedError` at once, saying what to use instead.

trio is not a test dependency: a coroutine driven by hand, with no event loop at all,
is what any other library's scheduler is to asyncio, so it stands in for trio here."""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

import aiozarr
from aiozarr.errors import UnsupportedError


def _drive_by_hand(coroutine: Coroutine[Any, Any, Any]) -> None:
    try:
        coroutine.send(None)
    finally:
        coroutine.close()


@pytest.mark.parametrize(
    "entry",
    [
        lambda path: aiozarr.open_array_async(path),
        lambda path: aiozarr.open_group_async(path),
        lambda path: aiozarr.open_async(path),
        lambda path: aiozarr.create_array_async(path, shape=(4,), dtype="i4"),
        lambda path: aiozarr.create_group_async(path),
        lambda path: aiozarr.read_many_async([]),
    ],
)
def test_entry_points_refuse_a_non_asyncio_caller(tmp_path: Path, entry: Any) -> None:
    with pytest.raises(UnsupportedError, match=r"runs on asyncio.*trio-asyncio.*sync API"):
        _drive_by_hand(entry(str(tmp_path / "a.zarr")))
    assert not (tmp_path / "a.zarr").exists()  # refused before anything was done
