"""A group's members as its notebook display shows them: one level, a bounded number.

A display must come back at once whatever the hierarchy's size: the members come from
the consolidated metadata (no request) or one listing, and only the first `MOST_SHOWN`
of them are read (one batch of metadata reads); the rest are counted, "... and N more".
"""

from __future__ import annotations

from typing import Literal

from aiozarr.metadata.model import ArrayMetadata, Node
from aiozarr.nodes import hierarchy
from aiozarr.nodes.group import AsyncGroup

#: The most members a group's display shows.
MOST_SHOWN = 20


async def members_text(group: AsyncGroup) -> str:
    """The group's name and its first `MOST_SHOWN` members, one line each (arrays with
    their shape and dtype, groups with a trailing '/'), then how many more were listed."""
    meta = group.metadata
    names = hierarchy.consolidated_names(meta)
    if names is not None:  # consolidated metadata: no request at all
        shown = {n: hierarchy.consolidated_member(meta, n) for n in names[:MOST_SHOWN]}
    else:
        names = await _listed(group)
        fmt: Literal[2, 3] = 3 if meta.zarr_format == 3 else 2
        shown = await hierarchy.read_members(group.store, group.path, names[:MOST_SHOWN], fmt)
    lines = [group.name, *(_line(name, node) for name, node in shown.items() if node is not None)]
    if len(names) > MOST_SHOWN:
        lines.append(f"  ... and {len(names) - MOST_SHOWN} more")
    return "\n".join(lines)


async def _listed(group: AsyncGroup) -> list[str]:
    """The names one listing of the group shows that may be members (directories, and
    names the store cannot tell), sorted."""
    documents = hierarchy.DOCUMENT_NAMES[3 if group.metadata.zarr_format == 3 else 2]
    found: set[str] = set()
    async for name, is_dir in group.store.list_dir_entries(group.path):
        if name not in documents and is_dir is not False:
            found.add(name)
    return sorted(found)


def _line(name: str, node: Node) -> str:
    if isinstance(node, ArrayMetadata):
        return f"  {name} {node.shape} {node.dtype}"
    return f"  {name}/"
