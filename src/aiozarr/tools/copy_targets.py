"""The destination nodes of a copy: each array and group created, or, resuming, the one
already there kept where its stored chunks read as the copy writes them. An array is
claimed with a placeholder until its units are written (`hierarchy.write_node`'s
`unfinished`): a copy stopped part way leaves no array that reads as fill values.

Resuming, a node another writer creates between the copy's look and its create (two
`cp --resume` into one new destination) is kept and checked like any node found there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiozarr.errors import MetadataError, NodeExistsError, NodeNotFoundError, UnfinishedNodeError
from aiozarr.metadata import v2, v3
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.nodes import hierarchy, node_updates, placement
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.creation import array_metadata
from aiozarr.nodes.group import AsyncGroup
from aiozarr.storage.protocol import Store

__all__ = ["make_group", "make_target"]

_Node = TypeVar("_Node", AsyncArray, AsyncGroup)
_LEFT_BY_A_STOPPED_COPY = (
    "the chunks of a stopped copy? Copy with resume to keep what equals the source, or "
    "with overwrite to replace it"
)


async def make_target(
    src: AsyncArray,
    store: Store,
    path: str,
    options: dict[str, Any] | None,
    *,
    resume: bool,
    overwrite: bool,
) -> tuple[AsyncArray, bool]:
    """The array at `path` the copy of `src` writes into, and whether its documents are
    still to be written (`hierarchy.finish_node`, once its units are). A new one is
    claimed with a placeholder no reader opens, so a copy stopped part way never reads
    as fill values; it is created with `options` (`create_array`'s; None: the source's
    metadata as it is). With `resume`, the one there (a placeholder too) is kept, and
    refused where its stored chunks would not decode as the copy's."""
    planned = src.metadata if options is None else array_metadata(**options)
    target = AsyncArray(store, path, planned)  # bad codecs fail here, before any write
    # An archive only appends (the placeholder would stay beside the document) and gets
    # its directory even when the copy stops: it gets the documents at the end alone.
    claims = store.capabilities.deletes
    unfinished = False

    async def create() -> AsyncArray:
        await placement.prepare_node(store, path, planned.zarr_format, overwrite=overwrite)
        if not resume and not overwrite:  # resuming, every stored unit is compared
            await placement.refuse_leftovers(store, path, _LEFT_BY_A_STOPPED_COPY)
        if claims:
            await hierarchy.write_node(store, path, planned, unfinished=True)
        return target

    async def open_found() -> AsyncArray:
        nonlocal unfinished
        try:
            return await AsyncArray.open(store, path)
        except UnfinishedNodeError as error:
            unfinished = True
            return AsyncArray(store, path, _stood_for(error, path))

    if not resume:
        return await create(), True
    node, found = await _found_or_created(AsyncArray, store, path, create, open_found)
    if not found:
        return node, True
    if unfinished:
        _check_layout(node, planned)
        return target, True
    return await _resumed_target(node, planned), False


def _stood_for(error: UnfinishedNodeError, path: str) -> ArrayMetadata:
    """The array metadata the placeholder that raised `error` stands for."""
    doc, where = error.metadata, f"the placeholder at {path or '/'!r}"
    if doc is None:
        raise error
    meta = v3.parse_node(doc, where) if doc.get("zarr_format") == 3 else v2.parse_zarray(doc, where)
    if not isinstance(meta, ArrayMetadata):
        raise error
    return meta


async def make_group(
    src: AsyncGroup, store: Store, path: str, fmt: int, *, resume: bool, overwrite: bool
) -> None:
    """Create the group at `path` with the attributes of `src`; with `resume`, keep the
    group there, given the source's attributes."""
    attributes = dict(src.attrs)

    async def create() -> AsyncGroup:
        return await AsyncGroup.create(
            store,
            path,
            attributes=attributes,
            zarr_format=fmt,
            overwrite=overwrite,
        )

    if not resume:
        await create()
        return
    existing, found = await _found_or_created(AsyncGroup, store, path, create)
    if found and dict(existing.attrs) != attributes:  # changed since the interrupted copy
        await node_updates.update_node(
            store,
            path,
            existing.metadata,
            lambda stored: dataclasses.replace(stored, attributes=attributes),
        )


async def _found_or_created(
    kind: type[_Node],
    store: Store,
    path: str,
    create: Callable[[], Awaitable[_Node]],
    open_found: Callable[[], Awaitable[_Node]] | None = None,
) -> tuple[_Node, bool]:
    """The `kind` node at `path` (opened by `open_found`, else `kind.open`) and True,
    else the one `create()` makes and False; a node another writer created meanwhile is
    opened (True). A node of the other kind there is a `NodeExistsError` that says so."""
    found = open_found or (lambda: kind.open(store, path))
    try:
        return await found(), True
    except NodeNotFoundError:
        pass
    try:
        return await create(), False
    except NodeExistsError as error:
        lost = error
    try:
        return await found(), True  # the winner's, checked as any found
    except NodeNotFoundError:
        raise await _not_resumable(store, path, kind, lost) from lost


async def _not_resumable(
    store: Store, path: str, kind: type, lost: NodeExistsError
) -> NodeExistsError:
    """Why a resumed copy cannot keep the node at `path` (`lost`, when it is gone)."""
    try:
        meta = await hierarchy.read_node(store, path)
    except NodeNotFoundError:
        return lost
    wanted = "an array" if kind is AsyncArray else "a group"
    found = "a group" if isinstance(meta, GroupMetadata) else "an array"
    return NodeExistsError(
        f"cannot resume into {path or '/'!r} in {store!r}: it is {found} and the copy "
        f"writes {wanted} there (copy with overwrite to replace it)"
    )


def _layout(meta: ArrayMetadata) -> dict[str, Any]:
    """What of an array's document decides how its stored chunks decode (not the fill
    value: a unit the copy finds missing is judged by the fill value it writes)."""
    return node_updates.as_built(meta, leave_out=("attributes", "dimension_names", "fill_value"))


async def _resumed_target(existing: AsyncArray, planned: ArrayMetadata) -> AsyncArray:
    """`existing`, given the metadata a fresh copy writes (`planned`) before its units are
    verified; refused where its stored chunks would not decode under it."""
    before = existing.metadata
    _check_layout(existing, planned)
    if before.to_dict() == planned.to_dict():
        return existing
    # the source's attributes (or fill value, ...) changed since the interrupted copy
    await node_updates.update_node(existing.store, existing.path, before, lambda _: planned)
    return AsyncArray(existing.store, existing.path, planned)


def _check_layout(existing: AsyncArray, planned: ArrayMetadata) -> None:
    """Refuse to resume into `existing` where its stored chunks would not decode under
    `planned`."""
    before = existing.metadata
    if _layout(before) != _layout(planned):
        raise MetadataError(
            f"cannot resume into {existing.name}: it has zarr_format {before.zarr_format}, "
            f"shape {existing.shape}, dtype {existing.dtype}, grid {before.chunk_shape} and "
            f"its codecs; the copy needs zarr_format {planned.zarr_format}, shape "
            f"{planned.shape}, dtype {planned.dtype}, grid {planned.chunk_shape} and the "
            "codecs it writes (copy with overwrite)"
        )
