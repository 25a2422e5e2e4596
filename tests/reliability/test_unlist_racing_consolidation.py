"""A writer that replaces nodes first takes them out of the consolidated snapshots
above (`tools/consolidate.py::unlist_async`). Another process consolidating the group
meanwhile lists new members; unlisting wrote the member list it had computed from its
own read, so the retry after the conflict dropped them again."""

from __future__ import annotations

from tests.reliability.interleaving import BeforeWrites, OtherProcess

import aiozarr
from aiozarr.nodes import hierarchy
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store
from aiozarr.sync import run
from aiozarr.tools.consolidate import consolidate_metadata_async, unlist_async


class ConsolidatesFirst(BeforeWrites):
    """Another process consolidates the root just before this store first writes it."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.fired = False

    async def before(self, key: str) -> None:
        if key == "zarr.json" and not self.fired:
            self.fired = True
            await consolidate_metadata_async(OtherProcess(self.inner))


def test_unlisting_keeps_what_another_consolidation_listed_meanwhile() -> None:
    inner = MemoryStore()
    root = aiozarr.create_group(inner)
    root.create_array("a", shape=(2,), dtype="i4")
    aiozarr.consolidate_metadata(inner)  # lists a
    root.create_array("b", shape=(2,), dtype="i4")  # listed by the other consolidation
    store = ConsolidatesFirst(inner)
    assert run(unlist_async, store, "a") == [""]
    assert store.fired
    stored = run(hierarchy.read_node, inner, "")
    assert sorted(stored.consolidated) == ["b"]  # was [] : b dropped with a
