"""`AsyncGroup`: a node that holds arrays and other groups."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from aiozarr import config
from aiozarr.engine.entry import CacheSettings
from aiozarr.errors import (
    GroupNotFoundError,
    InvalidValueError,
    NodeExistsError,
    NodeNotFoundError,
    NodeTypeError,
    ReadOnlyError,
    RefNotFoundError,
)
from aiozarr.metadata import dtypes, formats
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.metadata.v3draft import is_draft
from aiozarr.nodes import hierarchy, hierarchy_walk, node_updates, placement
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.creation import check_options
from aiozarr.nodes.description import GroupInfo, group_info
from aiozarr.storage.protocol import Store


async def _implicit(store: Store, path: str, v3: bool) -> bool:
    """Whether `path`, which holds no node's documents, is an implicit v3 group: only
    where the `implicit_groups` setting allows them, and keys lie below it."""
    return v3 and config.get().implicit_groups and await hierarchy_walk.has_children(store, path)


class AsyncGroup(hierarchy.NodeLocation):
    """A Zarr group (v2 or v3) navigated and changed with `await`."""

    #: Opened without a `zarr.json`: a v3 implicit group (a directory with nodes below).
    implicit: bool = False

    def __init__(
        self, store: Store, path: str, metadata: GroupMetadata, cache: CacheSettings | None = None
    ) -> None:
        self._store = store
        self._path = hierarchy.normalize_path(path)
        self._metadata = metadata
        #: The chunk cache of the arrays opened through it (None: aiozarr.config's).
        self._cache = cache

    @classmethod
    async def open(
        cls,
        store: Store,
        path: str = "",
        *,
        zarr_format: Literal[2, 3] | None = None,
        cache: CacheSettings | None = None,
    ) -> AsyncGroup:
        """Open the group at `path`; `GroupNotFoundError` where there is none. Arrays
        opened through it keep decoded chunks per `cache` (None: per `aiozarr.config`).

        A v3 path with no `zarr.json` is no group, whatever lies below it, unless the
        `implicit_groups` setting is on: then one with keys below it is an implicit group.
        """
        path = hierarchy.normalize_path(path)
        try:
            meta = await hierarchy.read_node(store, path, zarr_format)
        except RefNotFoundError as error:  # the store's history, not the node, is missing
            raise GroupNotFoundError(str(error)) from None
        except NodeNotFoundError as error:
            if await _implicit(store, path, zarr_format != 2):
                group = cls(store, path, GroupMetadata(zarr_format=3), cache)
                group.implicit = True
                return group
            raise GroupNotFoundError(
                f"{error}: no zarr.json or .zgroup there (Zarr v3 has no implicit groups; "
                "aiozarr.config.set(implicit_groups=True) or AIOZARR_IMPLICIT_GROUPS=1 "
                "opens a folder of nodes as one)"
            ) from None
        if isinstance(meta, ArrayMetadata):
            raise GroupNotFoundError(f"{path or '/'!r} in {store!r} is an array, not a group")
        return cls(store, path, meta, cache)

    @classmethod
    async def create(
        cls,
        store: Store,
        path: str = "",
        *,
        attributes: Mapping[str, Any] | None = None,
        zarr_format: Literal[2, 3] | None = 3,
        overwrite: bool = False,
        exist_ok: bool = False,
        empty_only: bool = False,
        cache: CacheSettings | None = None,
    ) -> AsyncGroup:
        """Create a group at `path` (and any missing parent groups), in `zarr_format`
        (None: 3); arrays opened through it keep decoded chunks per `cache` (None: per
        `aiozarr.config`). With `exist_ok`, a group there (another writer's, created
        meanwhile) is opened instead, if of `zarr_format` (None: of any); an array or a
        group of another format there is still `NodeExistsError`. With `empty_only`
        (mode "w-") any key below `path`, a node's or not, is `NodeExistsError`."""
        fmt = zarr_format or 3
        try:
            return await cls._create(store, path, attributes, fmt, overwrite, cache, empty_only)
        except NodeExistsError as error:
            if not exist_ok:
                raise
            try:
                found = await cls.open(store, path, cache=cache)  # whichever format won
            except NodeNotFoundError:  # an array (or the node went again)
                raise error from None
        if zarr_format not in (None, found.zarr_format):
            raise NodeExistsError(
                f"a Zarr v{found.zarr_format} group is at {path or '/'!r} in {store!r}, "
                f"not the v{zarr_format} one asked for"
            )
        return found

    @classmethod
    async def _create(
        cls,
        store: Store,
        path: str,
        attributes: Mapping[str, Any] | None,
        zarr_format: Literal[2, 3],
        overwrite: bool,
        cache: CacheSettings | None,
        empty_only: bool = False,
    ) -> AsyncGroup:
        if not store.writable:
            raise ReadOnlyError(f"cannot create a group in read-only {store!r}")
        path = hierarchy.normalize_path(path)
        meta = GroupMetadata(zarr_format=zarr_format, attributes=dict(attributes or {}))
        await placement.prepare_node(
            store, path, zarr_format, overwrite=overwrite, empty_only=empty_only, new=meta
        )
        await hierarchy.write_node(store, path, meta)
        if overwrite:  # the node replaced: no snapshot above may describe it
            await node_updates.replaced_in_snapshots(store, path, meta)
        return cls(store, path, meta, cache)

    # -- properties ------------------------------------------------------------------------

    @property
    def metadata(self) -> GroupMetadata:
        """The group's metadata (with its members' when consolidated)."""
        return self._metadata

    @property
    def attrs(self) -> dict[str, Any]:
        """A copy of the attributes, nested values too (`update_attributes` writes them)."""
        return copy.deepcopy(dict(self._metadata.attributes))

    @property
    def zarr_format(self) -> int:
        """1, 2 or 3."""
        return self._metadata.zarr_format

    # -- members ---------------------------------------------------------------------------

    def _child(self, name: str) -> str:
        name = hierarchy.normalize_path(name)
        if not name:
            raise NodeNotFoundError(f"empty member name in group {self.name}")
        return hierarchy.join(self._path, name)

    async def getitem(self, name: str) -> AsyncArray | AsyncGroup:
        """The array or group `name` (a relative path) in this group."""
        node = await self._open_member(name)
        if node is None:
            raise NodeNotFoundError(f"no member {name!r} in group {self.name} of {self._store!r}")
        return node

    async def _open_member(self, name: str) -> AsyncArray | AsyncGroup | None:
        """The member `name`, or None: from consolidated metadata, else one metadata read."""
        path = self._child(name)
        meta = hierarchy.consolidated_member(self._metadata, hierarchy.normalize_path(name))
        if meta is None:
            fmt: Literal[2, 3] = 3 if self.zarr_format == 3 else 2
            try:
                meta = await hierarchy.read_node(self._store, path, fmt)
            except NodeNotFoundError:
                if not await _implicit(self._store, path, fmt == 3):
                    return None
                meta = GroupMetadata(zarr_format=3)
        return _open(self._store, path, meta, self._cache)

    async def get(self, name: str, default: Any = None) -> AsyncArray | AsyncGroup | Any:
        """The member `name`, or `default` where there is none (zarr-python's `get`)."""
        node = await self._open_member(name)
        return default if node is None else node

    async def nmembers(self, max_depth: int | None = 0) -> int:
        """How many members there are, `max_depth` levels below the direct ones too
        (None: every level), as zarr-python's `nmembers`."""
        if max_depth == 0:
            return len(await self.member_names())
        return len([name async for name, _ in self.members(max_depth)])

    async def contains(self, name: str) -> bool:
        """Whether `name` is a member (array or group) of this group."""
        return await self._open_member(name) is not None

    async def _children(self) -> dict[str, AsyncArray | AsyncGroup]:
        """Every direct child, by name: from consolidated metadata, else one listing and
        every child's metadata in one batch (`hierarchy_walk.children`)."""
        found = await hierarchy_walk.children(self._store, self._path, self._metadata)
        return {
            name: _open(self._store, self._child(name), m, self._cache) for name, m in found.items()
        }

    async def member_names(self) -> list[str]:
        """Names of the direct children that are arrays or groups, sorted."""
        listed = hierarchy.consolidated_names(self._metadata)
        if listed is not None:  # consolidated metadata: no listing, no reads
            return listed
        return list(await self._children())

    async def members(
        self, max_depth: int | None = 0
    ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        """`(name, node)` for each direct child, opened concurrently; as zarr-python's,
        `max_depth` levels below them too (None: every level), each named by its path
        relative to this group, parents before their members."""
        if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
            raise InvalidValueError(
                f"members of group {self.name}: max_depth must be None or an int >= 0, "
                f"got {max_depth!r}"
            )
        if max_depth == 0:
            for item in (await self._children()).items():
                yield item
            return
        # subtree's depth counts levels of members: zarr-python's 0 is its 1
        depth = None if max_depth is None else max_depth + 1
        for item in preorder(await subtree(self, depth)):
            yield item

    async def arrays(self) -> list[tuple[str, AsyncArray]]:
        """`(name, array)` for the members that are arrays."""
        return [(n, m) async for n, m in self.members() if isinstance(m, AsyncArray)]

    async def groups(self) -> list[tuple[str, AsyncGroup]]:
        """`(name, group)` for the members that are groups."""
        return [(n, m) async for n, m in self.members() if isinstance(m, AsyncGroup)]

    async def keys(self) -> list[str]:
        """Names of the members, sorted (zarr-python's `keys()`)."""
        return await self.member_names()

    async def array_keys(self) -> list[str]:
        """Names of the members that are arrays, sorted."""
        return [name for name, _ in await self.arrays()]

    async def group_keys(self) -> list[str]:
        """Names of the members that are groups, sorted."""
        return [name for name, _ in await self.groups()]

    async def delitem(self, name: str) -> None:
        """Delete the member `name` and everything below it (`del group[name]`); a
        missing member is a `NodeNotFoundError` (a `KeyError`), as for a dict. A
        consolidated group drops it from its consolidated metadata too."""
        if not self._store.writable:
            raise ReadOnlyError(f"group {self.name} in {self._store!r} is read-only")
        if await self._open_member(name) is None:
            # A delete whose update of a snapshot above failed is finished (not retried,
            # it was listed there for good, read as fill values); else there is none.
            path = self._child(name)
            if await node_updates.replaced_in_snapshots(self._store, path, None, below=self._path):
                return
            raise NodeNotFoundError(f"no member {name!r} in group {self.name} of {self._store!r}")
        await placement.delete_under(self._store, self._child(name) + "/")
        # The snapshot as stored, not the handle's: another writer may have consolidated
        # the group since this handle was opened (`replaced_member` of a group without
        # one changes nothing, and nothing is written).
        member = hierarchy.normalize_path(name)
        await self._update_metadata(node_updates.replaced_member(member, None))
        # and the snapshots above the group (a root's lists every node below it)
        await node_updates.replaced_in_snapshots(
            self._store, self._child(name), None, below=self._path
        )

    async def require_array(
        self,
        name: str,
        *,
        shape: int | Sequence[int],
        dtype: Any = None,
        exact: bool = False,
        **options: Any,
    ) -> AsyncArray:
        """The member array `name` when its shape is `shape` and its dtype casts to
        `dtype` (is `dtype`, with `exact`), else a `NodeTypeError` (a `TypeError`, as
        zarr-python's); created with `options` when missing (or the one another caller
        created meanwhile)."""
        node = await self._open_member(name)
        if node is None:
            try:
                return await self.create_array(name, shape=shape, dtype=dtype, **options)
            except NodeExistsError as error:
                node = await self._created_meanwhile(name, error)
        if not isinstance(node, AsyncArray):
            raise NodeTypeError(f"member {name!r} of group {self.name} is a group, not an array")
        wanted = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        if wanted != node.shape:
            raise NodeTypeError(
                f"incompatible shape: array {node.name} has {node.shape}, not {wanted}"
            )
        if dtype is not None:
            np_dtype = dtypes.requested_dtype(dtype, node.zarr_format)[0]
            fits = node.dtype == np_dtype if exact else np.can_cast(node.dtype, np_dtype)
            if not fits:
                raise NodeTypeError(
                    f"incompatible dtype: array {node.name} is {node.dtype}, not {np_dtype}"
                )
        return node

    async def _created_meanwhile(
        self, name: str, error: NodeExistsError
    ) -> AsyncArray | AsyncGroup:
        """The member `name` another caller created between this caller's look and its
        create, which raised `error` (raised again when there is still none: its parent
        is an array, or the member went again)."""
        node = await self._open_member(name)
        if node is None:
            raise error
        return node

    async def create_group(
        self, name: str, *, attributes: Mapping[str, Any] | None = None, overwrite: bool = False
    ) -> AsyncGroup:
        """Create a child group (and missing intermediate groups)."""
        return await AsyncGroup.create(
            self._store,
            self._child(name),
            attributes=attributes,
            zarr_format=3 if self.zarr_format == 3 else 2,
            overwrite=overwrite,
        )

    async def require_group(self, name: str) -> AsyncGroup:
        """The child group `name`, created if it does not exist (or the one another
        caller created meanwhile); `NodeTypeError` (a `TypeError`, as zarr-python's) if
        it is an array."""
        node = await self._open_member(name)
        if node is None:
            try:
                return await self.create_group(name)
            except NodeExistsError as error:
                node = await self._created_meanwhile(name, error)
        if not isinstance(node, AsyncGroup):
            raise NodeTypeError(f"member {name!r} of group {self.name} is an array, not a group")
        return node

    async def create_array(
        self,
        name: str,
        *,
        shape: int | Sequence[int] | None = None,
        dtype: Any = None,
        overwrite: bool = False,
        **options: Any,
    ) -> AsyncArray:
        """Create a child array; options are those of `aiozarr.create_array` (`data=`
        in place of `shape` and `dtype` too)."""
        check_options("create_array", options)
        options.setdefault("zarr_format", 3 if self.zarr_format == 3 else 2)
        return await AsyncArray.create(
            self._store, self._child(name), shape=shape, dtype=dtype, overwrite=overwrite, **options
        )

    async def update_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `attributes` into the group's attributes as stored; the attributes now."""
        meta = await self._update_metadata(node_updates.merged_attributes(attributes))
        return dict(meta.attributes)

    async def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace all of the group's attributes with `attributes` and store them."""
        meta = await self._update_metadata(node_updates.replaced_attributes(attributes))
        return dict(meta.attributes)

    async def delete_attributes(self, names: Iterable[str]) -> dict[str, Any]:
        """Remove the attributes `names` from those stored; the attributes now."""
        meta = await self._update_metadata(node_updates.without_attributes(names))
        return dict(meta.attributes)

    async def _update_metadata(self, apply: node_updates.Apply[GroupMetadata]) -> GroupMetadata:
        """Store `apply(metadata as stored)` (`node_updates.update_node`) and keep it."""
        if not self._store.writable:
            raise ReadOnlyError(f"group {self.name} in {self._store!r} is read-only")
        change = await node_updates.update_node(self._store, self._path, self._metadata, apply)
        self._metadata = change.after
        return change.after

    def info(self, *, members: tuple[int, int] | None = None) -> GroupInfo:
        """A short, human-readable description (a `str`, with its fields as attributes,
        as zarr-python's `GroupInfo`); no I/O. `members`: (arrays, groups), if counted."""
        return group_info(
            name=self.name,
            zarr_format=self.zarr_format,
            format_name=formats.label(self._metadata),
            store=self._store,
            read_only=not self._store.writable,
            members=members,
        )

    async def info_complete(self) -> GroupInfo:
        """`info` with the members counted (one listing, or the consolidated metadata)."""
        children = await self._children()
        arrays = sum(isinstance(node, AsyncArray) for node in children.values())
        return self.info(members=(arrays, len(children) - arrays))

    async def tree(self, *, max_depth: int | None = None) -> str:
        """The hierarchy below this group as indented text, with shapes and dtypes."""
        lines = [self.name]
        for path, node in preorder(await subtree(self, max_depth)):
            indent = "  " * path.count("/")
            name = path.rpartition("/")[2]
            if isinstance(node, AsyncArray):
                lines.append(f"  {indent}{name} {node.shape} {node.dtype}")
            else:
                lines.append(f"  {indent}{name}/")
        return "\n".join(lines)

    def __reduce__(self) -> tuple[object, ...]:
        return (AsyncGroup, (self._store, self._path, self._metadata, self._cache))

    def __repr__(self) -> str:
        return f"<AsyncGroup {self._store!r} {self.name}>"


Members = list[tuple[str, "AsyncArray | AsyncGroup"]]


async def subtree(
    group: AsyncGroup, max_depth: int | None = None, *, use_consolidated: bool = True
) -> dict[str, Members]:
    """The members of `group` and of every group below it, by the group's path relative
    to `group` ("" for itself), down to `max_depth` levels of members.

    Read by the one hierarchy reader, `hierarchy_walk.levels`: level by level, each
    level's groups at once, no recursion. Without `use_consolidated` every group is
    listed, consolidated metadata or not.
    """
    members: dict[str, Members] = {}
    store = group.store
    reading = hierarchy_walk.levels(
        store, group.path, group.metadata, max_depth, use_consolidated=use_consolidated
    )
    async for batch in reading:
        for rel, found in batch:
            parent = hierarchy_walk.under(group.path, rel)
            members[rel] = [
                (name, _open(store, hierarchy.join(parent, name), meta, group._cache))
                for name, meta in found.items()
            ]
    return members


def _open(
    store: Store, path: str, meta: hierarchy.Node, cache: CacheSettings | None = None
) -> AsyncArray | AsyncGroup:
    if isinstance(meta, ArrayMetadata):
        return AsyncArray(store, path, meta, cache=cache)
    return AsyncGroup(store, path, meta, cache)


def preorder(members: Mapping[str, Members]) -> Iterator[tuple[str, AsyncArray | AsyncGroup]]:
    """`(path, node)` of every node in `members` (as `subtree` gives them), parents before
    children, each group's members in name order; an explicit stack, not recursion."""
    stack = [(name, node) for name, node in reversed(members.get("", []))]
    while stack:
        path, node = stack.pop()
        yield path, node
        children = members.get(path, []) if isinstance(node, AsyncGroup) else []
        stack += [(hierarchy.join(path, name), child) for name, child in reversed(children)]


async def walk(
    group: AsyncGroup, path: str = "", *, as_stored: bool = False
) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
    """Every node below `group` as `(path relative to it, node)`, parents before children.

    The hierarchy's metadata is read first, level by level (`subtree`), so any depth works.
    With `as_stored` every group is listed: consolidated metadata is a snapshot, stale
    once a node changed after it (a copy or migration of it would lose data). A 2020
    draft hierarchy is read as always: its members come from the listing that read it.
    A store that cannot list (plain HTTP) is read from its consolidated metadata, the
    only description of its members it has.
    """
    listed = as_stored and not is_draft(group.metadata) and group.store.listable
    for child, node in preorder(await subtree(group, use_consolidated=not listed)):
        yield hierarchy.join(path, child), node
