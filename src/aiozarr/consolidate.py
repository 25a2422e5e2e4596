"""`consolidate_metadata`: gather every node's metadata below a group into one document.

v3 groups get zarr-python's inline `consolidated_metadata` in their `zarr.json`; v2
groups get a `.zmetadata` key. Afterwards opening the group and every member's metadata
costs one request (v3) or one batch (v2): `AsyncGroup` serves members from it.
Consolidation costs one listing of the hierarchy and one batch of reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from aiozarr import hierarchy
from aiozarr.api import StoreLike, resolve_store
from aiozarr.errors import MetadataError, NodeNotFoundError
from aiozarr.group import AsyncGroup
from aiozarr.metadata import consolidated, v2, v3
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.storage.base import Store
from aiozarr.sync import Group, run

Node = ArrayMetadata | GroupMetadata
_V2_NAMES = (hierarchy.V2_ARRAY_KEY, hierarchy.V2_GROUP_KEY, hierarchy.V2_ATTRS_KEY)


async def _members(store: Store, path: str, zarr_format: int) -> dict[str, Node]:
    """Every explicit node below `path` by relative path: one listing, one batch of reads."""
    prefix = f"{path}/" if path else ""
    names = (hierarchy.V3_KEY,) if zarr_format == 3 else _V2_NAMES
    keys = sorted(
        [
            key
            async for key in store.list_prefix(prefix)
            if key.rpartition("/")[2] in names and "/" in key[len(prefix) :]
        ]
    )
    docs = await hierarchy.get_documents(store, keys)
    if zarr_format == 3:
        nodes: dict[str, Node] = {}
        for key, doc in zip(keys, docs, strict=True):
            if doc is not None:
                node = v3.parse_node(bytes(memoryview(doc)), key)
                if isinstance(node, GroupMetadata):  # members come from the root's listing
                    node = dataclasses.replace(node, consolidated=None)
                nodes[key[len(prefix) :].rpartition("/")[0]] = node
        return nodes
    by_path: dict[str, dict[str, Any]] = {}
    for key, doc in zip(keys, docs, strict=True):
        if doc is not None:
            rel, _, name = key[len(prefix) :].rpartition("/")
            by_path.setdefault(rel, {})[name] = hierarchy.json_load(doc, key)
    return {
        rel: _v2_node(parts, prefix + rel)
        for rel, parts in by_path.items()
        if hierarchy.V2_ARRAY_KEY in parts or hierarchy.V2_GROUP_KEY in parts
    }


def _v2_node(parts: Mapping[str, Any], path: str) -> Node:
    attrs = parts.get(hierarchy.V2_ATTRS_KEY)
    if hierarchy.V2_ARRAY_KEY in parts:
        key = hierarchy.join(path, hierarchy.V2_ARRAY_KEY)
        return v2.parse_zarray(parts[hierarchy.V2_ARRAY_KEY], key, attrs)
    key = hierarchy.join(path, hierarchy.V2_GROUP_KEY)
    return v2.parse_zgroup(parts[hierarchy.V2_GROUP_KEY], key, attrs)


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
    members = await _members(resolved, path, root.zarr_format)
    meta = dataclasses.replace(root, consolidated=members)
    if root.zarr_format == 3:
        await hierarchy.write_node(resolved, path, meta)
    else:
        doc = consolidated.zmetadata_json({"": root, **members})
        await resolved.set(hierarchy.join(path, consolidated.ZMETADATA_KEY), doc)
    return AsyncGroup(resolved, path, meta)


def consolidate_metadata(store: StoreLike, path: str = "", **options: Any) -> Group:
    """Consolidate the metadata below the group at `path` (`storage_options` as the twin)."""
    return Group(run(consolidate_metadata_async, store, path, **options))
