"""A group's members as its notebook display shows them: one level, a bounded number.

A display must come back at once whatever the hierarchy's size: the members come from
the consolidated metadata (no request) or one listing, and only the first `MOST_SHOWN`
of them are read (one batch of metadata reads); the rest are counted, "... and N more".
"""

from __future__ import annotations

from typing import Literal

from aiozarr.metadata.model import ArrayMetadata, Node
from aiozarr.nodes import hierarchy, hierarchy_walk
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
        fmt: Literal[2, 3] = 3 if meta.zarr_format == 3 else 2
        kinds = await hierarchy_walk.listed_kinds(group.store, group.path, fmt)
        names = sorted(name for name, is_dir in kinds.items() if is_dir is not False)
        shown = await hierarchy.read_members(group.store, group.path, names[:MOST_SHOWN], fmt)
    lines = [group.name, *(_line(name, node) for name, node in shown.items() if node is not None)]
    if len(names) > MOST_SHOWN:
        lines.append(f"  ... and {len(names) - MOST_SHOWN} more")
    return "\n".join(lines)


def _line(name: str, node: Node) -> str:
    if isinstance(node, ArrayMetadata):
        return f"  {name} {node.shape} {node.dtype}"
    return f"  {name}/"
