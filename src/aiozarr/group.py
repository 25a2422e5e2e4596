"""`AsyncGroup`: a node that holds arrays and other groups."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Literal

import anyio
import numpy as np

from aiozarr import hierarchy
from aiozarr.array import AsyncArray
from aiozarr.creation import check_options
from aiozarr.errors import NodeNotFoundError, ReadOnlyError, unwrap_group
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.storage.base import Store


class AsyncGroup(hierarchy.NodeLocation):
    """A Zarr group (v2 or v3) navigated and changed with `await`."""

    def __init__(self, store: Store, path: str, metadata: GroupMetadata) -> None:
        self._store = store
        self._path = hierarchy.normalize_path(path)
        self._metadata = metadata

    @classmethod
    async def open(
        cls, store: Store, path: str = "", *, zarr_format: Literal[2, 3] | None = None
    ) -> AsyncGroup:
        """Open the group at `path`.

        A v3 path with no `zarr.json` but with nodes below it opens as an implicit group.
        """
        path = hierarchy.normalize_path(path)
        try:
            meta = await hierarchy.read_node(store, path, zarr_format)
        except NodeNotFoundError:
            if zarr_format != 2 and await _has_children(store, path):
                return cls(store, path, GroupMetadata(zarr_format=3))
            raise
        if isinstance(meta, ArrayMetadata):
            raise NodeNotFoundError(f"{path or '/'!r} in {store!r} is an array, not a group")
        return cls(store, path, meta)

    @classmethod
    async def create(
        cls,
        store: Store,
        path: str = "",
        *,
        attributes: Mapping[str, Any] | None = None,
        zarr_format: Literal[2, 3] = 3,
        overwrite: bool = False,
    ) -> AsyncGroup:
        """Create a group at `path` (and any missing parent groups)."""
        if not store.writable:
            raise ReadOnlyError(f"cannot create a group in read-only {store!r}")
        path = hierarchy.normalize_path(path)
        meta = GroupMetadata(zarr_format=zarr_format, attributes=dict(attributes or {}))
        await hierarchy.prepare_node(store, path, zarr_format, overwrite=overwrite)
        await hierarchy.write_node(store, path, meta)
        return cls(store, path, meta)

    # -- properties ------------------------------------------------------------------------

    @property
    def metadata(self) -> GroupMetadata:
        return self._metadata

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self._metadata.attributes)

    @property
    def zarr_format(self) -> int:
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
                if fmt == 3 and await _has_children(self._store, path):
                    meta = GroupMetadata(zarr_format=3)  # an implicit group
                else:
                    return None
        if isinstance(meta, ArrayMetadata):
            return AsyncArray(self._store, path, meta)
        return AsyncGroup(self._store, path, meta)

    async def contains(self, name: str) -> bool:
        """Whether `name` is a member (array or group) of this group."""
        return await self._open_member(name) is not None

    async def _children(self) -> dict[str, AsyncArray | AsyncGroup]:
        """Every direct child, by name: one listing, then every child's metadata in one
        batch (`hierarchy.read_members`), never a request per listed name in turn."""
        listed = hierarchy.consolidated_names(self._metadata)
        if listed is None:
            return await self._listed_children()
        nodes: dict[str, AsyncArray | AsyncGroup | None] = {}

        async def open_one(name: str) -> None:
            nodes[name] = await self._open_member(name)

        with unwrap_group():  # a member that cannot be read raises its own StoreError
            async with anyio.create_task_group() as tg:
                for name in listed:
                    tg.start_soon(open_one, name)
        return {n: node for n, node in sorted(nodes.items()) if node is not None}

    async def _listed_children(self) -> dict[str, AsyncArray | AsyncGroup]:
        # A listed key (not a directory) is never a node: only directories, and names
        # the store cannot tell, are read.
        kinds: dict[str, bool | None] = {}
        async for name, is_dir in self._store.list_dir_entries(self._path):
            if name.startswith(".") or name == "zarr.json":
                continue
            both = (kinds.get(name, False), is_dir)  # a key and a directory: a directory
            kinds[name] = True if True in both else None if None in both else False
        names = [name for name, is_dir in kinds.items() if is_dir is not False]
        fmt: Literal[2, 3] = 3 if self.zarr_format == 3 else 2
        metas = await hierarchy.read_members(self._store, self._path, names, fmt)
        if fmt == 3:  # a directory without zarr.json is an implicit group
            unknown = [n for n, meta in metas.items() if meta is None and kinds[n] is None]
            below = await _have_children(self._store, [self._child(n) for n in unknown])
            kinds.update(zip(unknown, below, strict=True))
            for name, meta in metas.items():
                if meta is None and kinds[name]:
                    metas[name] = GroupMetadata(zarr_format=3)
        nodes: dict[str, AsyncArray | AsyncGroup] = {}
        for name, meta in sorted(metas.items()):
            if isinstance(meta, ArrayMetadata):
                nodes[name] = AsyncArray(self._store, self._child(name), meta)
            elif meta is not None:
                nodes[name] = AsyncGroup(self._store, self._child(name), meta)
        return nodes

    async def member_names(self) -> list[str]:
        """Names of the direct children that are arrays or groups, sorted."""
        listed = hierarchy.consolidated_names(self._metadata)
        if listed is not None:  # consolidated metadata: no listing, no reads
            return listed
        return list(await self._children())

    async def members(self) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        """`(name, node)` for each direct child, opened concurrently."""
        for item in (await self._children()).items():
            yield item

    async def arrays(self) -> list[tuple[str, AsyncArray]]:
        return [(n, m) async for n, m in self.members() if isinstance(m, AsyncArray)]

    async def groups(self) -> list[tuple[str, AsyncGroup]]:
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
            raise NodeNotFoundError(f"no member {name!r} in group {self.name} of {self._store!r}")
        await self._store.delete_prefix(self._child(name) + "/")
        consolidated = self._metadata.consolidated
        if consolidated is not None:
            member = hierarchy.normalize_path(name)
            kept = {
                k: v
                for k, v in consolidated.items()
                if k != member and not k.startswith(member + "/")
            }
            meta = dataclasses.replace(self._metadata, consolidated=kept)
            await hierarchy.write_node(self._store, self._path, meta)
            self._metadata = meta

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
        `dtype` (is `dtype`, with `exact`), else a `TypeError`, as zarr-python's; created
        with `options` when missing."""
        node = await self._open_member(name)
        if node is None:
            return await self.create_array(name, shape=shape, dtype=dtype, **options)
        if not isinstance(node, AsyncArray):
            raise TypeError(f"member {name!r} of {self.name} is a group, not an array")
        wanted = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        if wanted != node.shape:
            raise TypeError(f"incompatible shape: {name!r} has {node.shape}, not {wanted}")
        if dtype is not None:
            np_dtype = np.dtype(dtype)
            fits = node.dtype == np_dtype if exact else np.can_cast(node.dtype, np_dtype)
            if not fits:
                raise TypeError(f"incompatible dtype: {name!r} is {node.dtype}, not {np_dtype}")
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
        """The child group `name`, created if it does not exist."""
        try:
            node = await self.getitem(name)
        except NodeNotFoundError:
            return await self.create_group(name)
        if not isinstance(node, AsyncGroup):
            raise NodeNotFoundError(f"member {name!r} of {self.name} is an array, not a group")
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
        """Merge `attributes` into the group's attributes and store them."""
        return await self.replace_attributes({**self._metadata.attributes, **attributes})

    async def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace all of the group's attributes with `attributes` and store them."""
        if not self._store.writable:
            raise ReadOnlyError(f"group {self.name} in {self._store!r} is read-only")
        meta = dataclasses.replace(self._metadata, attributes=dict(attributes))
        await hierarchy.write_node(self._store, self._path, meta)
        self._metadata = meta
        return dict(attributes)

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
        return (AsyncGroup, (self._store, self._path, self._metadata))

    def __repr__(self) -> str:
        return f"<AsyncGroup {self._store!r} {self.name}>"


async def _has_children(store: Store, path: str) -> bool:
    async for _ in store.list_prefix(f"{path}/" if path else ""):
        return True
    return False


async def _have_children(store: Store, paths: Sequence[str]) -> list[bool]:
    """`_has_children` of each path, all listed concurrently."""
    found = [False] * len(paths)

    async def one(i: int, path: str) -> None:
        found[i] = await _has_children(store, path)

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for i, path in enumerate(paths):
                tg.start_soon(one, i, path)
    return found


Members = list[tuple[str, "AsyncArray | AsyncGroup"]]

# Groups whose members are read at once while walking a level: bounds the tasks (and
# the listings in flight) of a wide level; requests are bounded by the store's budget.
_WALK_BATCH = 256


async def subtree(group: AsyncGroup, max_depth: int | None = None) -> dict[str, Members]:
    """The members of `group` and of every group below it, by the group's path relative
    to `group` ("" for itself), down to `max_depth` levels of members.

    Read level by level, each level's groups at once: no recursion, so a hierarchy of
    any depth costs one loop turn per level, not a stack frame.
    """
    members: dict[str, Members] = {}
    level: list[tuple[str, AsyncGroup]] = [("", group)]
    depth = 1
    while level and (max_depth is None or depth <= max_depth):
        below: list[tuple[str, AsyncGroup]] = []
        for start in range(0, len(level), _WALK_BATCH):
            batch = level[start : start + _WALK_BATCH]
            for (path, _), children in zip(batch, await _children_of(batch), strict=True):
                members[path] = list(children.items())
                below += [
                    (hierarchy.join(path, name), node)
                    for name, node in children.items()
                    if isinstance(node, AsyncGroup)
                ]
        level, depth = below, depth + 1
    return members


async def _children_of(
    groups: Sequence[tuple[str, AsyncGroup]],
) -> list[dict[str, AsyncArray | AsyncGroup]]:
    """Every group's direct children, all groups read concurrently."""
    found: list[dict[str, AsyncArray | AsyncGroup]] = [{} for _ in groups]

    async def read(i: int, group: AsyncGroup) -> None:
        found[i] = await group._children()

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for i, (_, group) in enumerate(groups):
                tg.start_soon(read, i, group)
    return found


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
    group: AsyncGroup, path: str = ""
) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
    """Every node below `group` as `(path relative to it, node)`, parents before children.

    The hierarchy's metadata is read first, level by level (`subtree`), so any depth works.
    """
    for child, node in preorder(await subtree(group)):
        yield hierarchy.join(path, child), node
