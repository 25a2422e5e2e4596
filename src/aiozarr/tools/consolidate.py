"""`consolidate_metadata`: gather every node's metadata below a group into one document.

v3 groups get zarr-python's inline `consolidated_metadata` in their `zarr.json`; v2
groups get a `.zmetadata` key. Afterwards opening the group and every member's metadata
costs one request (v3) or one batch (v2): `AsyncGroup` serves members from it.
Consolidation lists each group once (never a chunk key) and reads each level's
documents in one batch (`hierarchy_walk.levels`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from aiozarr.api import StoreLike, resolve_store
from aiozarr.errors import MetadataError, NodeNotFoundError
from aiozarr.metadata import formats
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.nodes import hierarchy, hierarchy_walk, node_updates
from aiozarr.nodes.group import AsyncGroup
from aiozarr.storage.protocol import Store
from aiozarr.sync import Group, run

Node = ArrayMetadata | GroupMetadata


async def _members(store: Store, root: GroupMetadata, path: str) -> dict[str, Node]:
    """Every explicit node below the group at `path` (metadata `root`) by relative path,
    read by the one hierarchy reader (`hierarchy_walk.levels`) with every group listed:
    one listing per group and one batch of documents per level, never a chunk key.
    Implicit v3 groups are walked through but are not members."""
    nodes: dict[str, Node] = {}
    async for batch in hierarchy_walk.levels(store, path, root, use_consolidated=False):
        for rel, found in batch:
            for name, node in found.items():
                if node is not hierarchy_walk.IMPLICIT_GROUP:
                    nodes[hierarchy.join(rel, name)] = node
    return dict(sorted(nodes.items()))


async def consolidate_metadata_async(
    store: StoreLike,
    path: str = "",
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> AsyncGroup:
    """Consolidate the metadata of the group at `path` and everything below it.

    Returns the group, opened with its consolidated metadata. Sync twin:
    `consolidate_metadata`.
    """
    resolved = resolve_store(store, mode="r+", storage_options=storage_options)
    path = hierarchy.normalize_path(path)
    root = await hierarchy.read_node(resolved, path, use_consolidated=False)
    if not isinstance(root, GroupMetadata):
        raise NodeNotFoundError(f"{path or '/'!r} in {resolved!r} is an array, not a group")
    if root.zarr_format not in (2, 3):
        raise MetadataError(f"cannot consolidate Zarr format {root.zarr_format} metadata")
    members = await _stored_until_current(resolved, path, root)
    return AsyncGroup(resolved, path, dataclasses.replace(root, consolidated=members))


async def _stored_until_current(store: Store, path: str, root: GroupMetadata) -> dict[str, Node]:
    """The members below the group, stored as its snapshot until they are still those
    read after it is stored (`node_updates.until_current`)."""
    fmt = formats.format_of(root)
    members = await _members(store, root, path)

    async def store_once() -> bool:
        nonlocal members
        await node_updates.write_consolidated(store, path, root, members)
        now = await _members(store, root, path)
        # compared as documents: metadata holding a NaN fill value never compares equal
        same = fmt.consolidated_documents(path, root, now) == fmt.consolidated_documents(
            path, root, members
        )
        members = now
        return same

    await node_updates.until_current(store_once, f"{path or '/'!r} in {store!r}")
    return members


async def unlist_async(store: Store, path: str) -> list[str]:
    """Take the node at `path` and the nodes below it out of the consolidated metadata
    of the group at `path` and of the groups above it; the paths of the groups that hold
    one, nearest first, to consolidate again once the nodes are written. A writer that
    replaces nodes does this first: listed meanwhile, they would read as they were (the
    chunks not written yet as fill values)."""
    path = hierarchy.normalize_path(path)
    held = await node_updates.snapshots_above(store, path, including=True)
    for group, meta in held.items():
        rel = path[len(group) :].lstrip("/")
        # Applied to the snapshot as stored: another writer's consolidation meanwhile
        # keeps what it listed beside the nodes taken out.
        unlisted = node_updates.replaced_member(rel, None) if rel else _emptied
        await node_updates.update_node(store, group, meta, unlisted)
    return list(held)


def _emptied(meta: GroupMetadata) -> GroupMetadata:
    """The group's snapshot with no member (the group itself is being replaced)."""
    return dataclasses.replace(meta, consolidated={})


def consolidate_metadata(store: StoreLike, path: str = "", **options: Any) -> Group:
    """Consolidate the metadata of the group at `path` and everything below it, for
    blocking use (`storage_options` as `consolidate_metadata_async`); returns the `Group`
    opened with its consolidated metadata."""
    return Group(run(consolidate_metadata_async, store, path, **options))
