"""Consolidated metadata for `to_zarr`: every node's metadata below a group, stored in
the group (v3 inline in its `zarr.json`, v2 `.zmetadata`).

A write into a group other writers may be writing too (`to_zarr` in mode "a" or "r+")
consolidates until the tree read after its snapshot is stored is the one it stored:
of two writers that consolidate at once, the one whose snapshot stays read the tree
after the other's change, so the snapshot holds both (appended rows, attributes).

After a write into a group below the root, every group above it that holds a snapshot
is consolidated again too, as xarray consolidates the store's root after its writes: a
reader of the root's snapshot (a data tree, `group=` opened through the root) sees the
rows and groups written. A write that consolidates nothing drops those snapshots
instead, as it drops the group's own.
"""

from __future__ import annotations

from aiozarr.metadata import formats
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.nodes import hierarchy, node_updates
from aiozarr.storage.protocol import Store
from aiozarr.xarray.tree import Node, read_tree

__all__ = ["consolidate_async", "consolidate_current", "consolidate_written"]

Tree = dict[str, tuple[GroupMetadata, dict[str, ArrayMetadata]]]


async def consolidate_async(store: Store, path: str = "") -> None:
    """Store every node's metadata below the group `path` in the group (v3 inline, v2
    `.zmetadata`), so that opening it takes one request."""
    await _consolidate(store, path)


async def consolidate_current(store: Store, path: str = "") -> None:
    """`consolidate_async`, again until what is stored below the group is what the
    snapshot holds; `VersionConflictError` when other writers kept changing it."""

    async def store_once() -> bool:
        written = await _consolidate(store, path)
        return await _snapshot(store, path) == written

    await node_updates.until_current(store_once, f"{path or '/'!r} in {store!r}")


async def consolidate_written(
    store: Store, path: str, *, shared: bool, consolidated: bool = True
) -> None:
    """The snapshots after a write into the group `path`: its own (`consolidate_current`
    when other writers may be writing the group, `shared`; else `consolidate_async`),
    then, nearest first, that of every group above it holding one (`consolidate_current`:
    other writers may be writing below them). Not `consolidated`: the snapshots above
    are dropped instead (the group's own, the write dropped), so none is left stale and
    their readers list the groups."""
    if not consolidated:
        for parent, meta in (await node_updates.snapshots_above(store, path)).items():
            await node_updates.update_node(
                store, parent, meta, node_updates.with_consolidated(None)
            )
        return
    await (consolidate_current if shared else consolidate_async)(store, path)
    for parent in await node_updates.snapshots_above(store, path):
        await consolidate_current(store, parent)


async def _consolidate(store: Store, path: str) -> dict[str, bytes]:
    """Store the snapshot of what is below the group now; its documents as built."""
    tree = await read_tree(store, path, consolidated=False, recursive=True)
    root, members = _members(tree)
    await node_updates.write_consolidated(store, path, root, members)
    return formats.format_of(root).consolidated_documents(path, root, members)


async def _snapshot(store: Store, path: str) -> dict[str, bytes]:
    """The documents a snapshot of what is below the group now would be."""
    tree = await read_tree(store, path, consolidated=False, recursive=True)
    root, members = _members(tree)
    return formats.format_of(root).consolidated_documents(path, root, members)


def _members(tree: Tree) -> tuple[GroupMetadata, dict[str, Node]]:
    """The group at the tree's root, and every node below it by relative path."""
    members: dict[str, Node] = {}
    for rel, (meta, arrays) in tree.items():
        if rel:
            members[rel] = meta
        members.update({hierarchy.join(rel, n): m for n, m in arrays.items()})
    return tree[""][0], members
