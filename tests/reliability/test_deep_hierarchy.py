"""A hierarchy 1,000 groups deep is walked without recursion, and no call, however it
fails, stops the sync API for the calls after it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest

import aiozarr
from aiozarr import sync
from aiozarr.cli import tree as tree_cli
from aiozarr.nodes.group import walk
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.sync import portal

pytestmark = pytest.mark.timeout(180)

DEPTH = 1000


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A LocalStore group with groups nested DEPTH levels deep, an array at the bottom."""
    path = tmp_path_factory.mktemp("deep") / "deep.zarr"
    root = aiozarr.open_group(str(path), mode="w")
    bottom = root.create_group("/".join(["g"] * DEPTH))
    bottom.create_array("x", shape=(2,), dtype="i4")
    yield path
    _remove_deep(path)


def _remove_deep(path: Path) -> None:
    # shutil.rmtree (pytest's clean-up of old temporary directories) recurses per level.
    for level in range(DEPTH + 1, -1, -1):
        directory = (
            path.joinpath(*["g"] * level) if level <= DEPTH else path.joinpath(*["g"] * DEPTH, "x")
        )
        for entry in directory.iterdir():
            if not entry.is_dir():
                entry.unlink()
        directory.rmdir()


def _next_call_works() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(3,), dtype="i4", chunks=(2,))
    arr[...] = [1, 2, 3]
    np.testing.assert_array_equal(arr[...], [1, 2, 3])


def test_tree_of_a_deep_hierarchy(deep: Path) -> None:
    root = aiozarr.open_group(str(deep), mode="r")
    lines = root.tree().splitlines()
    assert len(lines) == 1 + DEPTH + 1
    assert lines[-1] == "  " * (DEPTH + 1) + "x (2,) int32"
    assert root.member_names() == ["g"]
    _next_call_works()


def test_tree_depth_limit_of_a_deep_hierarchy(deep: Path) -> None:
    root = aiozarr.open_group(str(deep), mode="r")
    assert root.tree(max_depth=3).splitlines() == ["/", "  g/", "    g/", "      g/"]


def test_walk_of_a_deep_hierarchy(deep: Path) -> None:
    async def paths() -> list[str]:
        root = await aiozarr.open_group_async(str(deep), mode="r")
        return [path async for path, _ in walk(root)]

    found = asyncio.run(paths())
    assert len(found) == DEPTH + 1
    assert found[-1] == "/".join(["g"] * DEPTH) + "/x"


def test_cli_tree_of_a_deep_hierarchy(deep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tree_cli.main([str(deep)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("└── x (2,) int32 chunks (2,)")
    assert tree_cli.main([str(deep), "--json"]) == 1  # json nests: a named, one-line error
    assert "nested too deeply for --json" in capsys.readouterr().err
    _next_call_works()


async def _unbalanced_cancel_scopes(depth: int = 0) -> None:
    # Recurses until RecursionError strikes inside anyio's scope bookkeeping, which then
    # raises "Attempted to exit a cancel scope that isn't the current task's ...".
    async with anyio.create_task_group():
        with anyio.CancelScope():
            await _unbalanced_cancel_scopes(depth + 1)


def test_a_call_that_breaks_anyio_does_not_stop_the_sync_api() -> None:
    for _ in range(3):
        with pytest.raises((RuntimeError, RecursionError)):
            sync.run(_unbalanced_cancel_scopes)
        _next_call_works()


def test_a_dead_loop_is_replaced_by_the_next_call() -> None:
    _next_call_works()
    dead = portal._get_loop()
    dead.loop.call_soon_threadsafe(dead.loop.stop)
    dead.thread.join(10)
    assert not dead.running
    _next_call_works()
    assert portal._get_loop() is not dead
