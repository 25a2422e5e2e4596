"""Group metadata changed by two writers at once: a stale group handle, a delete and a
consolidation, an attribute update and a consolidation. Nothing another writer stored is
lost or overwritten, and no snapshot lists a member that is gone. The other writer acts
through its own store object (`OtherProcess`: its own write locks, as another process),
just before this writer's write (`BeforeWrites`), so the race is forced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.reliability.interleaving import BeforeWrites, OtherProcess

import aiozarr
from aiozarr.errors import NodeNotFoundError
from aiozarr.storage.backends.local import LocalStore

FORMATS = pytest.mark.parametrize("zarr_format", [2, 3])


class _Meanwhile(BeforeWrites):
    """Runs `then` (another writer's change) once, just before this store writes `key`."""

    def __init__(self, path: Path, key: str, then: object) -> None:
        super().__init__(LocalStore(path))
        self.key, self.then = key, then

    async def before(self, key: str) -> None:
        if key == self.key and self.then is not None:
            then, self.then = self.then, None
            await then()  # type: ignore[operator]


@FORMATS
def test_a_stale_group_handle_never_writes_over_an_array_put_there(
    tmp_path: Path, zarr_format: int
) -> None:
    """Its attribute update wrote a group document on the array's version (v3: the array
    became a group, its chunks orphaned; v2: a .zgroup beside the .zarray)."""
    root = aiozarr.create_group(tmp_path, zarr_format=zarr_format)
    root.create_group("sub")
    stale = aiozarr.open_group(tmp_path, path="sub", mode="r+")
    del root["sub"]  # another writer replaces the group by an array
    root.create_array("sub", data=np.arange(6, dtype="i4"), chunks=(3,))
    with pytest.raises(NodeNotFoundError, match=r"'sub'.*array"):
        stale.attrs["title"] = "stale"
    arr = aiozarr.open_array(tmp_path, path="sub", mode="r")
    np.testing.assert_array_equal(arr[:], np.arange(6))
    assert "title" not in arr.attrs


@FORMATS
def test_a_delete_through_a_handle_opened_before_consolidation_leaves_the_snapshot(
    tmp_path: Path, zarr_format: int
) -> None:
    """The handle had no snapshot when opened, so the one stored since kept listing the
    deleted member: readers read it as the fill value."""
    root = aiozarr.create_group(tmp_path, zarr_format=zarr_format)
    root.create_array("x", data=np.arange(1, 5, dtype="i4"), chunks=(2,))
    root.create_array("y", data=np.arange(4, dtype="i4"), chunks=(2,))
    handle = aiozarr.open_group(tmp_path, mode="r+")
    aiozarr.consolidate_metadata(tmp_path)  # another writer
    del handle["x"]
    assert sorted(aiozarr.open_group(tmp_path, mode="r").keys()) == ["y"]


@FORMATS
def test_a_delete_racing_a_consolidation_stays_deleted(tmp_path: Path, zarr_format: int) -> None:
    """The consolidation walked the members before the delete and wrote them after it
    (v3 retried its conditional write with the same members; v2 wrote unconditionally)."""
    root = aiozarr.create_group(tmp_path, zarr_format=zarr_format)
    root.create_array("x", data=np.arange(1, 5, dtype="i4"), chunks=(2,))
    root.create_array("y", data=np.arange(4, dtype="i4"), chunks=(2,))
    aiozarr.consolidate_metadata(tmp_path)
    root.create_array("z", shape=(2,), dtype="i4", chunks=(2,))  # the snapshot must change

    async def delete_x() -> None:
        group = await aiozarr.open_group_async(OtherProcess(LocalStore(tmp_path)), mode="r+")
        await group.delitem("x")

    key = "zarr.json" if zarr_format == 3 else ".zmetadata"
    aiozarr.consolidate_metadata(_Meanwhile(tmp_path, key, delete_x))
    assert sorted(aiozarr.open_group(tmp_path, mode="r").keys()) == ["y", "z"]


def test_an_attribute_update_racing_a_v2_consolidation_is_kept(tmp_path: Path) -> None:
    """v2 readers take a group's attributes from .zmetadata, which the consolidation
    wrote from the .zattrs it had read: the update was in .zattrs but seen by no one."""
    root = aiozarr.create_group(tmp_path, zarr_format=2, attributes={"first": 1})
    root.create_array("x", shape=(2,), dtype="i4", chunks=(2,))
    aiozarr.consolidate_metadata(tmp_path)
    root.create_array("y", shape=(2,), dtype="i4", chunks=(2,))

    async def update() -> None:
        group = await aiozarr.open_group_async(OtherProcess(LocalStore(tmp_path)), mode="r+")
        await group.update_attributes({"other": True})

    aiozarr.consolidate_metadata(_Meanwhile(tmp_path, ".zmetadata", update))
    assert aiozarr.open_group(tmp_path, mode="r").attrs.asdict() == {"first": 1, "other": True}
