"""The Zarr format a `to_zarr` write takes: that of the hierarchy it writes into.

A group written into keeps its format, and a new group takes the format of the nearest
group above it: a document of the other format written beside a parent's would hide the
parent's members from every reader (zarr-python reads `zarr.json` before `.zgroup`), and
below a parent of the other format no reader finds the new group. So `zarr_format`
unset means the hierarchy's (3 where there is none), and one given that differs from
it is refused, naming both formats. xarray's own engine takes the format of a group it
writes into, but gives a new group below a v2 root zarr-python's default (v3), writing
a v3 root document that hides the root's v2 variables; with an explicit format it
mixes the two in one group.
"""

from __future__ import annotations

import anyio

from aiozarr.errors import MetadataError, NodeNotFoundError, unwrap_group
from aiozarr.metadata.model import GroupMetadata
from aiozarr.nodes import hierarchy
from aiozarr.storage.protocol import Store

__all__ = ["FormatMismatchError", "written_format"]


class FormatMismatchError(MetadataError):
    """`zarr_format` given for a write into a hierarchy stored in the other format."""


async def written_format(
    store: Store, path: str, group: GroupMetadata | None, given: int | None
) -> int:
    """The format the write of the group at `path` takes: `group`'s (the group there,
    written into), else the nearest group's above `path`, else `given` (3 if None).
    `given` differing from the hierarchy's is a `FormatMismatchError`."""
    if given not in (None, 2, 3):
        raise ValueError(f"zarr_format must be 2, 3 or None, got {given!r}")
    if group is not None:
        where, found = path, group.zarr_format
    else:
        where, found = await _nearest_group(store, path)
    if found is None:
        return 3 if given is None else given
    stored = 2 if found == 2 else 3
    if given is not None and given != stored:
        raise FormatMismatchError(
            f"zarr_format={given} was given, but the group {where or '/'!r} in {store!r} "
            f"is Zarr v{stored}: a v{given} node cannot be written into a v{stored} "
            f"hierarchy (its readers would not find it, or it would hide the v{stored} "
            f"members); leave zarr_format out, or pass zarr_format={stored}"
        )
    return stored


async def _nearest_group(store: Store, path: str) -> tuple[str, int | None]:
    """The deepest group above `path` and its format ("", None: none), every parent read
    at once. An array there is left for the create to refuse."""
    parts = path.split("/") if path else []
    parents = ["/".join(parts[:i]) for i in range(len(parts))]
    found: dict[str, int] = {}

    async def read(parent: str) -> None:
        try:
            node = await hierarchy.read_node(store, parent, use_consolidated=False)
        except NodeNotFoundError:
            return
        if isinstance(node, GroupMetadata):
            found[parent] = node.zarr_format

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for parent in parents:
                tg.start_soon(read, parent)
    for parent in reversed(parents):
        if parent in found:
            return parent, found[parent]
    return "", None
