"""Reading a group for xarray: its documents, its members' metadata (from consolidated
metadata, or its listing and one batch of member documents), and below it for a tree.

Opening reads the group's documents (v3 and v2 at once) and, on a store that can list,
its listing in the same round trip unless consolidated metadata is required; then every
member's metadata in one batch: 1 round trip with consolidated metadata, 2 without (the
dimension coordinates, read by `variables`, are one more).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import anyio
import anyio.lowlevel

from aiozarr.errors import GroupNotFoundError, unwrap_group
from aiozarr.metadata import consolidated as v2_consolidated
from aiozarr.metadata import v3
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.nodes import hierarchy, hierarchy_walk
from aiozarr.storage.protocol import Store

__all__ = ["UNCONSOLIDATED_WARNING", "Node", "read_tree"]

Node = ArrayMetadata | GroupMetadata

# What xarray's zarr engine says when it falls back from missing consolidated metadata:
# the same words, so that code (and tests) watching for it see it from this engine too.
UNCONSOLIDATED_WARNING = (
    "Failed to open Zarr store with consolidated metadata, but successfully read with "
    "non-consolidated metadata. This is typically much slower for opening a dataset. "
    "To silence this warning, open with "
    "consolidated=False, or consolidate the store (aiozarr.consolidate_metadata)."
)


def _group_keys(path: str, consolidated: bool | None, zarr_format: int | None) -> list[str]:
    names = [] if zarr_format == 2 else [hierarchy.V3_KEY]
    if zarr_format != 3:
        names += [".zgroup", ".zattrs"]
        if consolidated is not False:
            names.append(v2_consolidated.ZMETADATA_KEY)
    return [hierarchy.join(path, k) for k in names]


def _parse_group(
    store: Store,
    path: str,
    docs: Mapping[str, Any],
    consolidated: bool | None,
    root: GroupMetadata | None = None,
) -> GroupMetadata:
    zjson, zgroup, zattrs, zmeta = (
        docs.get(hierarchy.join(path, k))
        for k in (hierarchy.V3_KEY, ".zgroup", ".zattrs", v2_consolidated.ZMETADATA_KEY)
    )
    if zjson is not None:
        key = hierarchy.join(path, hierarchy.V3_KEY)
        meta = v3.parse_node(bytes(memoryview(zjson)), key)
        if isinstance(meta, ArrayMetadata):
            raise GroupNotFoundError(f"{path or '/'!r} in {store!r} is an array, not a group")
    elif zgroup is not None:
        v2_docs = {".zgroup": zgroup, ".zattrs": zattrs, v2_consolidated.ZMETADATA_KEY: zmeta}
        group = hierarchy.parse_v2(path, v2_docs)
        assert isinstance(group, GroupMetadata)  # .zgroup, and .zarray never asked for
        meta = group
    else:
        raise GroupNotFoundError(
            f"no Zarr group at {path or '/'!r} in {store!r}: it does not exist (no zarr.json "
            "or .zgroup there)"
        )
    if consolidated is False:
        return GroupMetadata(zarr_format=meta.zarr_format, attributes=meta.attributes)
    if meta.consolidated is None and root is not None:
        meta = _members_from_root(meta, root, path)
    if consolidated is True and meta.consolidated is None:
        raise GroupNotFoundError(f"the group {path or '/'!r} in {store!r} is not consolidated")
    return meta


def _root_snapshot(store: Store, docs: Mapping[str, Any]) -> GroupMetadata | None:
    """The root group, when `docs` hold its consolidated metadata."""
    try:
        root = _parse_group(store, "", docs, None)
    except GroupNotFoundError:
        return None
    return root if root.consolidated is not None else None


def _members_from_root(meta: GroupMetadata, root: GroupMetadata, path: str) -> GroupMetadata:
    """`meta` with its members from the root's consolidated metadata, where xarray's zarr
    engine reads a subgroup's (`to_zarr(group=...)` and `DataTree.to_zarr` consolidate
    at the root only); `meta` as it is when the root holds no group at `path`."""
    members = root.consolidated or {}
    if root.zarr_format != meta.zarr_format or not isinstance(members.get(path), GroupMetadata):
        return meta
    prefix = f"{path}/"
    below = {p[len(prefix) :]: m for p, m in members.items() if p.startswith(prefix)}
    return dataclasses.replace(meta, consolidated=below)


class _Listing:
    """A group's listing, sent with its documents: its child names, or why it failed
    (kept, not raised, until the names are needed: consolidated metadata may answer)."""

    def __init__(self) -> None:
        self.names: list[str] | None = None
        self.error: Exception | None = None

    async def run(self, store: Store, path: str) -> None:
        try:
            self.names = [n async for n in store.list_dir(path)]
        except Exception as error:  # a bucket that refuses LIST, say
            self.error = error

    def result(self) -> list[str]:
        if self.error is not None:
            raise self.error
        assert self.names is not None
        return self.names


async def _read_group(
    store: Store,
    path: str,
    consolidated: bool | None,
    zarr_format: int | None = None,
    *,
    warn_unconsolidated: bool = False,
) -> tuple[GroupMetadata, list[str] | None]:
    """The group at `path` and, unless consolidated metadata lists them, its child names.

    Unless consolidated metadata is required (`consolidated=True`), a store that can
    list is listed in the same round trip as the group's documents: without consolidated
    metadata the names are then at hand (one round trip fewer); with it the listing is
    cancelled, or its answer dropped (one request, no round trip). A failed listing
    matters only when the names are needed. A subgroup without consolidated metadata of
    its own takes its members from the root's (read in the same batch), as xarray's zarr
    engine does, where its listing cannot stand in: `consolidated=True`, or a store that
    cannot list (a listing sees writes made with `consolidated=False`, a snapshot not).
    """
    keys = _group_keys(path, consolidated, zarr_format)
    root_keys: list[str] = []
    if path and (consolidated is True or (consolidated is None and not store.listable)):
        root_keys = _group_keys("", True, zarr_format)
    listing = _Listing()
    with unwrap_group():  # a missing group raises GroupNotFoundError, not a group of it
        async with anyio.create_task_group() as tg:
            if store.listable and consolidated is not True:
                tg.start_soon(listing.run, store, path)
            found = await hierarchy.get_documents(store, keys + root_keys)
            docs = dict(zip(keys + root_keys, found, strict=True))
            root = _root_snapshot(store, docs) if root_keys else None
            meta = _parse_group(store, path, docs, consolidated, root)
            if meta.consolidated is not None:
                tg.cancel_scope.cancel()
    if meta.consolidated is not None:
        return meta, None
    if not store.listable:
        raise GroupNotFoundError(
            f"the group {path or '/'!r} in {store!r} has no consolidated metadata and the "
            "store cannot list its members: consolidate it (aiozarr.consolidate_metadata)"
        )
    if consolidated is None and warn_unconsolidated and not store.capabilities.metadata_in_hand:
        warnings.warn(UNCONSOLIDATED_WARNING, RuntimeWarning, stacklevel=2)
    return meta, listing.result()


async def _read_members(
    store: Store, path: str, names: Iterable[str], zarr_format: int
) -> dict[str, Node]:
    """The metadata of each listed child that is a node, all read in one batch
    (`hierarchy.read_members`); a file or an implicit group is not a member xarray uses."""
    fmt: Literal[2, 3] = 3 if zarr_format == 3 else 2
    wanted = [n for n in names if n not in hierarchy.DOCUMENT_NAMES[fmt]]  # ".hidden" too
    found = await hierarchy.read_members(store, path, wanted, fmt)
    return {name: node for name, node in sorted(found.items()) if node is not None}


async def read_tree(
    store: Store,
    path: str = "",
    *,
    consolidated: bool | None = None,
    recursive: bool = False,
    zarr_format: int | None = None,
    warn_unconsolidated: bool = False,
) -> dict[str, tuple[GroupMetadata, dict[str, ArrayMetadata]]]:
    """Each group at or (when `recursive`) below `path`: its metadata and its arrays'.

    Keys are group paths relative to `path` ("" for the group itself). With
    `warn_unconsolidated`, a group read without consolidated metadata when
    `consolidated=None` gives xarray's RuntimeWarning (`UNCONSOLIDATED_WARNING`).
    """
    path = hierarchy.normalize_path(path)
    meta, names = await _read_group(
        store, path, consolidated, zarr_format, warn_unconsolidated=warn_unconsolidated
    )
    if meta.consolidated is not None:
        return _tree_from_consolidated(meta, recursive)
    members = await _read_members(store, path, names or [], meta.zarr_format)
    tree = {"": (meta, {n: m for n, m in members.items() if isinstance(m, ArrayMetadata)})}
    if not recursive:
        return tree
    # Below the group: the one hierarchy reader, every group listed (as consolidated=False
    # would open it), a level's groups at once; implicit v3 groups are not members.
    groups = {n: m for n, m in members.items() if isinstance(m, GroupMetadata)}
    walk = hierarchy_walk.levels_from(
        store, path, list(groups.items()), use_consolidated=False, implicit=False
    )
    async for batch in walk:
        for rel, found in batch:
            group = GroupMetadata(
                zarr_format=groups[rel].zarr_format, attributes=groups[rel].attributes
            )
            arrays = {n: m for n, m in found.items() if isinstance(m, ArrayMetadata)}
            tree[rel] = (group, arrays)
            groups.update(
                (hierarchy.join(rel, n), m)
                for n, m in found.items()
                if isinstance(m, GroupMetadata)
            )
    return tree


def _tree_from_consolidated(
    meta: GroupMetadata, recursive: bool
) -> dict[str, tuple[GroupMetadata, dict[str, ArrayMetadata]]]:
    members = dict(meta.consolidated or {})
    groups = {"": GroupMetadata(zarr_format=meta.zarr_format, attributes=meta.attributes)}
    if recursive:
        groups.update({p: m for p, m in members.items() if isinstance(m, GroupMetadata)})
    tree: dict[str, tuple[GroupMetadata, dict[str, ArrayMetadata]]] = {}
    for group_path, group_meta in sorted(groups.items()):
        prefix = f"{group_path}/" if group_path else ""
        arrays = {
            p[len(prefix) :]: m
            for p, m in sorted(members.items())
            if isinstance(m, ArrayMetadata) and p.startswith(prefix) and "/" not in p[len(prefix) :]
        }
        tree[group_path] = (group_meta, arrays)
    return tree
