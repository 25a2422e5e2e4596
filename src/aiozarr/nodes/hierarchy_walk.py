"""The one hierarchy reader: every node below a group, level by level.

A group's direct children come from its consolidated metadata when it has some (no
request at all), else from one listing (`Store.list_dir_entries`) and one batch of
child documents (`hierarchy.read_members`). `levels` reads a whole level's groups at
once, in batches of `WALK_BATCH`, and loops level by level: no recursion, so any depth
costs one loop turn per level, not a stack frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Literal

import anyio

from aiozarr import config
from aiozarr.errors import unwrap_group
from aiozarr.metadata.model import GroupMetadata
from aiozarr.nodes import hierarchy
from aiozarr.nodes.hierarchy import Node
from aiozarr.storage.protocol import Store

#: Groups whose members are read at once while walking a level: bounds the tasks (and
#: the listings in flight) of a wide level; requests are bounded by the store's budget.
WALK_BATCH = 256

#: The metadata of every implicit v3 group (a directory without `zarr.json` with keys
#: below it, where the `implicit_groups` setting allows them) the reader finds: callers
#: that must tell it from an explicit group with no attributes compare by identity
#: (`node is IMPLICIT_GROUP`).
IMPLICIT_GROUP = GroupMetadata(zarr_format=3)

#: One group's direct children by name (sorted), as `children` reads them.
Children = dict[str, Node]


async def has_children(store: Store, path: str) -> bool:
    """Whether any key lies below `path` (an implicit v3 group has some)."""
    async for _ in store.list_prefix(f"{path}/" if path else ""):
        return True
    return False


async def have_children(store: Store, paths: Sequence[str]) -> list[bool]:
    """`has_children` of each path, all listed concurrently."""
    found = [False] * len(paths)

    async def one(i: int, path: str) -> None:
        found[i] = await has_children(store, path)

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for i, path in enumerate(paths):
                tg.start_soon(one, i, path)
    return found


async def children(
    store: Store,
    path: str,
    meta: GroupMetadata,
    *,
    use_consolidated: bool = True,
    implicit: bool | None = None,
) -> Children:
    """The direct children of the group at `path` whose metadata is `meta`, by name.

    From consolidated metadata when `meta` has it (no request); else one listing and
    one batch of the children's documents, never a request per listed name in turn.
    Every listed name but the group's own metadata documents may be a child, as in
    zarr-python (a `.hidden` array is one).
    With `implicit` (by default the `implicit_groups` setting, off) a v3 directory
    without `zarr.json` but with keys below it is an implicit group (a hidden one,
    `.git`, never is); without, a directory without a node's documents is not a child.
    Without `use_consolidated` consolidated metadata is neither used nor returned.
    """
    listed = hierarchy.consolidated_names(meta) if use_consolidated else None
    if listed is not None:
        found = {name: hierarchy.consolidated_member(meta, name) for name in listed}
        return {name: node for name, node in found.items() if node is not None}
    fmt: Literal[2, 3] = 3 if meta.zarr_format == 3 else 2
    kinds = await listed_kinds(store, path, fmt)
    # A listed key (not a directory) is never a node: only directories, and names
    # the store cannot tell, are read.
    names = [name for name, is_dir in kinds.items() if is_dir is not False]
    metas = await hierarchy.read_members(store, path, names, fmt)
    if implicit is None:
        implicit = config.get().implicit_groups
    if fmt == 3 and implicit:  # a directory without zarr.json is an implicit group
        # ... unless hidden: tools' folders (.git, .ipynb_checkpoints) are no groups
        candidates = [n for n, m in metas.items() if m is None and not n.startswith(".")]
        unknown = [n for n in candidates if kinds[n] is None]
        below = await have_children(store, [hierarchy.join(path, n) for n in unknown])
        kinds.update(zip(unknown, below, strict=True))
        for name in candidates:
            if kinds[name]:
                metas[name] = IMPLICIT_GROUP
    if not use_consolidated:
        metas = {n: _unconsolidated(m) for n, m in metas.items()}
    return {name: m for name, m in sorted(metas.items()) if m is not None}


async def listed_kinds(store: Store, path: str, fmt: Literal[2, 3]) -> dict[str, bool | None]:
    """What one listing of the group at `path` shows beside its own documents (any other
    name may be a child: ".hidden"): each name, and whether it is a directory (None: the
    store cannot tell; a key and a directory of one name: a directory)."""
    documents = hierarchy.DOCUMENT_NAMES[fmt]
    kinds: dict[str, bool | None] = {}
    async for name, is_dir in store.list_dir_entries(path):
        if name in documents:
            continue
        both = (kinds.get(name, False), is_dir)
        kinds[name] = True if True in both else None if None in both else False
    return kinds


def _unconsolidated(meta: Node | None) -> Node | None:
    if isinstance(meta, GroupMetadata) and meta.consolidated is not None:
        return dataclasses.replace(meta, consolidated=None)
    return meta


async def children_of(
    store: Store,
    groups: Sequence[tuple[str, GroupMetadata]],
    *,
    use_consolidated: bool = True,
    implicit: bool | None = None,
) -> list[Children]:
    """`children` of every `(path, metadata)` group, all read concurrently."""
    found: list[Children] = [{} for _ in groups]

    async def read(i: int, path: str, meta: GroupMetadata) -> None:
        found[i] = await children(
            store, path, meta, use_consolidated=use_consolidated, implicit=implicit
        )

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for i, (path, meta) in enumerate(groups):
                tg.start_soon(read, i, path, meta)
    return found


async def levels(
    store: Store,
    path: str,
    meta: GroupMetadata,
    max_depth: int | None = None,
    *,
    use_consolidated: bool = True,
    implicit: bool | None = None,
) -> AsyncIterator[list[tuple[str, Children]]]:
    """The hierarchy below the group at `path` (metadata `meta`), one level at a time.

    Each item is a list of `(group path relative to path, its children)`: first the
    group itself (""), then its child groups, and so on, down to `max_depth` levels of
    members; a wide level comes in several items of up to `WALK_BATCH` groups.
    Without `use_consolidated` every group is listed, consolidated metadata or not;
    `implicit` as for `children`.
    """
    walk = levels_from(
        store, path, [("", meta)], max_depth, use_consolidated=use_consolidated, implicit=implicit
    )
    async for batch in walk:
        yield batch


async def levels_from(
    store: Store,
    path: str,
    level: Sequence[tuple[str, GroupMetadata]],
    max_depth: int | None = None,
    *,
    use_consolidated: bool = True,
    implicit: bool | None = None,
) -> AsyncIterator[list[tuple[str, Children]]]:
    """`levels`, starting from the groups `level` (paths relative to `path`) at once."""
    depth = 1
    while level and (max_depth is None or depth <= max_depth):
        below: list[tuple[str, GroupMetadata]] = []
        for start in range(0, len(level), WALK_BATCH):
            batch = level[start : start + WALK_BATCH]
            paths = [(under(path, rel), m) for rel, m in batch]
            read = await children_of(
                store, paths, use_consolidated=use_consolidated, implicit=implicit
            )
            out = [(rel, found) for (rel, _), found in zip(batch, read, strict=True)]
            below += [
                (hierarchy.join(rel, name), node)
                for rel, found in out
                for name, node in found.items()
                if isinstance(node, GroupMetadata)
            ]
            yield out
        level, depth = below, depth + 1


def under(path: str, rel: str) -> str:
    """The path `rel` (relative to `path`, "" for itself) in the store."""
    return hierarchy.join(path, rel) if rel else path
