"""Making room for a new node: what stands at its path refused or deleted, its missing
parents created as groups (`prepare_node`), and the keys a node must not be written
over (`refuse_contents`, `refuse_leftovers`). Documents are read and written through
`hierarchy.py`."""

from __future__ import annotations

import json

import anyio

from aiozarr.engine.entry import forget_deleted
from aiozarr.errors import MetadataError, NodeExistsError, unwrap_group
from aiozarr.metadata import formats
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata, Node
from aiozarr.nodes.hierarchy import (
    CLAIM_NAMES,
    RESERVED_NAMES,
    check_node_path,
    create_document,
    existing_node,
    get_documents,
    node_documents,
)
from aiozarr.storage.protocol import Store


async def refuse_contents(store: Store, path: str) -> None:
    """Refuse `path` with any key below it (mode "w-", as zarr-python's): what no node
    holds (chunks, files) would be taken as the new node's. One listing, one key."""
    if not store.listable:
        return
    async for key in store.list_prefix(f"{path}/" if path else ""):
        raise NodeExistsError(
            f"{path or '/'!r} in {store!r} is not empty ({key!r} lies below it): mode "
            "'w-' creates a group only where nothing is; mode 'w' replaces what is there"
        )


async def refuse_leftovers(store: Store, path: str, hint: str) -> None:
    """Refuse keys below `path`, where no node is (the chunks of a copy or migration
    stopped before its documents were written): a writer that leaves units of fill
    values unwritten would have them read as its own. `hint` says what to do."""
    if not store.listable:
        return
    async for key in store.list_prefix(f"{path}/" if path else ""):
        raise NodeExistsError(
            f"{key!r} lies below {path or '/'!r} in {store!r}, where no array or group is: {hint}"
        )


async def prepare_node(
    store: Store,
    path: str,
    zarr_format: int,
    *,
    overwrite: bool,
    empty_only: bool = False,
    new: Node | None = None,
) -> None:
    """Make room for a new node at `path` and make sure its parents are groups.

    A name in `path` that is a metadata document's is refused first (`check_node_path`),
    and so is `new`, the node to be written, when its documents cannot be built (a data
    type or attribute its format cannot store): refused later, the node `overwrite`
    deleted was gone and nothing stood in its place.
    Without `overwrite` an existing node is an error; with it, everything under `path`
    is deleted, node or not, as zarr-python does: chunks an earlier array left without
    its metadata would otherwise be read as the new array's. Missing parents get group
    metadata, as the specs require, each only if still missing when written (a parent
    another writer created meanwhile keeps its attributes); a parent that is an array is
    an error, found before anything is deleted (under a v3 array lie its chunks). Whether
    the node exists and which parents are missing is asked in one batch; with `overwrite`
    the parents are asked, then everything under `path` deleted (a store that cannot list
    deletes only under a node it finds). `empty_only` (mode "w-"): any key below `path`
    is refused too (`refuse_contents`), before any parent is created."""
    check_node_path(path)
    if new is not None:
        node_documents(path, new)
    parts = path.split("/") if path else []
    parents = ["/".join(parts[:i]) for i in range(len(parts))]
    fmt = formats.numbered(zarr_format)
    if fmt is None:
        raise MetadataError(f"no metadata format has zarr_format {zarr_format}")
    parent_keys = [fmt.group_key(p) for p in parents]
    under = f"{path}/" if path else ""  # the metadata keys too
    if overwrite and store.listable:
        # The parents first: under an array, `under` holds its chunks (v3 "x/c/").
        found = await get_documents(store, parent_keys) if parents else []
        missing = await _missing_parents(store, path, parents, found, zarr_format)
        await delete_under(store, under)
    else:
        node_keys = [k for writer in formats.writable() for k in writer.node_keys(path)]
        found = await get_documents(store, node_keys + parent_keys)
        missing = await _missing_parents(store, path, parents, found[len(node_keys) :], zarr_format)
        if any(data is not None for data in found[: len(node_keys)]):
            if not overwrite:
                raise NodeExistsError(
                    f"an array or group already exists at {path or '/'!r} in {store!r}"
                )
            try:
                await store.delete_prefix(under)
            finally:
                forget_deleted(store, under)
        if empty_only:  # mode "w-": nor any key below it
            await refuse_contents(store, path)
    group = GroupMetadata(zarr_format=zarr_format)  # type: ignore[arg-type]
    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for parent in missing:
                tg.start_soon(_create_parent, store, parent, group, path)


async def delete_under(store: Store, under: str) -> None:
    """Delete every key starting with `under`, the node's own documents first, and of
    those its claims (`CLAIM_NAMES`) before the rest: a delete stopped part way (a
    killed process, a failed batch) leaves documents and chunks no node holds, never a
    node whose deleted chunks read as fill values, nor a v2 node without its `.zattrs`.
    Its documents are named, not listed (icechunk lists only the prefixes of nodes).
    An object store deletes a prefix in batches in the listing's order, where a v3
    array's `zarr.json` comes after its chunks (`del group[name]` uses this too)."""
    try:
        await store.delete_many([under + name for name in sorted(CLAIM_NAMES)])
        await store.delete_many([under + name for name in sorted(RESERVED_NAMES - CLAIM_NAMES)])
        await store.delete_prefix(under)
    finally:  # a failed delete may have deleted some still
        forget_deleted(store, under)


async def _missing_parents(
    store: Store, path: str, parents: list[str], found: list[bytes | None], zarr_format: int
) -> list[str]:
    """The parents of `path` with no group document (`found`, by `parents`), once none
    is an array: a v3 array's document is the one a group's would be (`zarr.json`), a v2
    array's is another (a missing `.zgroup`, read to tell). A group of this format found
    by that second read was created meanwhile by another writer: it is no longer missing."""
    missing = []
    for parent, data in zip(parents, found, strict=True):
        if data is None:
            existing = await existing_node(store, parent)
            if isinstance(existing, GroupMetadata) and existing.zarr_format == zarr_format:
                continue  # created by another writer since `found` was read
            if isinstance(existing, GroupMetadata):  # a group of the other format
                raise NodeExistsError(
                    f"cannot create {path!r}: its parent {parent or '/'!r} is a Zarr "
                    f"v{existing.zarr_format} group, and a group document of another format "
                    "written beside it would hide its members; create the node in "
                    f"zarr_format={existing.zarr_format}"
                )
            missing.append(parent)
            is_array = isinstance(existing, ArrayMetadata)
        else:
            is_array = _node_type(data) == "array"
        if is_array:
            raise NodeExistsError(f"cannot create {path!r}: its parent {parent!r} is an array")
    return missing


def _node_type(document: bytes) -> str | None:
    """A v3 document's `node_type` (None where it is not readable as one)."""
    try:
        found = json.loads(bytes(document))
    except ValueError:
        return None
    return found.get("node_type") if isinstance(found, dict) else None


async def _create_parent(store: Store, parent: str, group: GroupMetadata, path: str) -> None:
    """Give the missing parent `parent` group metadata, only if it is still missing:
    another writer may have created it meanwhile, with attributes a plain write would
    wipe. A group there is kept; an array there is an error."""
    fmt = formats.format_of(group)
    key = fmt.group_key(parent)
    doc = fmt.documents(parent, group)[key]
    created = await create_document(store, key, doc)
    if not created and isinstance(await existing_node(store, parent), ArrayMetadata):
        raise NodeExistsError(f"cannot create {path!r}: its parent {parent!r} is an array")
