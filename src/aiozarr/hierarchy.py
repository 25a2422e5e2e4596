"""Finding, reading and writing node metadata (arrays and groups) in a store.

Format detection costs one request for v3 (`zarr.json`) and one more batch, with
every v2 key fetched concurrently, when there is no `zarr.json`.
"""

from __future__ import annotations

import json
from typing import Literal

from aiozarr.errors import MetadataError, NodeExistsError, NodeNotFoundError
from aiozarr.metadata import v2, v3
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.storage.base import RangeRequest, Store

Node = ArrayMetadata | GroupMetadata

V3_KEY = "zarr.json"
V2_ARRAY_KEY = ".zarray"
V2_GROUP_KEY = ".zgroup"
V2_ATTRS_KEY = ".zattrs"


def join(path: str, name: str) -> str:
    """`path/name`, where either may be empty."""
    return f"{path}/{name}" if path else name


def normalize_path(path: str) -> str:
    """A node path without leading/trailing slashes ("" is the root)."""
    return "/".join(part for part in path.split("/") if part)


def _parse_json(data: object, key: str) -> object:
    try:
        return json.loads(bytes(memoryview(data)))  # type: ignore[arg-type]
    except (UnicodeDecodeError, ValueError) as error:
        raise MetadataError(f"{key}: not valid JSON ({error})") from None


async def read_node(store: Store, path: str, zarr_format: Literal[2, 3] | None = None) -> Node:
    """The metadata of the node at `path`; `NodeNotFoundError` when there is none."""
    if zarr_format in (None, 3):
        key = join(path, V3_KEY)
        data = await store.get(key)
        if data is not None:
            return v3.parse_node(bytes(memoryview(data)), key)
        if zarr_format == 3:
            raise NodeNotFoundError(
                f"no Zarr v3 array or group at {path or '/'!r} ({key} missing) in {store!r}"
            )
    keys = [join(path, k) for k in (V2_ARRAY_KEY, V2_GROUP_KEY, V2_ATTRS_KEY)]
    zarray, zgroup, zattrs = await store.get_partial_values([RangeRequest(k) for k in keys])
    attrs = None if zattrs is None else _parse_json(zattrs, keys[2])
    if attrs is not None and not isinstance(attrs, dict):
        raise MetadataError(f"{keys[2]}: expected a JSON object, got {type(attrs).__name__}")
    if zarray is not None:
        return v2.parse_zarray(bytes(memoryview(zarray)), keys[0], attrs)
    if zgroup is not None:
        return v2.parse_zgroup(bytes(memoryview(zgroup)), keys[1], attrs)
    raise NodeNotFoundError(f"no Zarr array or group at {path or '/'!r} in {store!r}")


def node_documents(path: str, meta: Node) -> dict[str, bytes]:
    """The keys and documents that store `meta` at `path`."""
    if meta.zarr_format == 3:
        doc = v3.array_to_json(meta) if isinstance(meta, ArrayMetadata) else v3.group_to_json(meta)
        return {join(path, V3_KEY): doc}
    if meta.zarr_format != 2:
        raise MetadataError(f"cannot write Zarr format {meta.zarr_format} metadata (read only)")
    docs: dict[str, bytes] = {}
    if isinstance(meta, ArrayMetadata):
        docs[join(path, V2_ARRAY_KEY)] = v2.zarray_to_json(meta)
    else:
        docs[join(path, V2_GROUP_KEY)] = v2.zgroup_to_json(meta)
    if meta.attributes:
        docs[join(path, V2_ATTRS_KEY)] = v2.attrs_to_json(meta.attributes)
    return docs


async def write_node(store: Store, path: str, meta: Node) -> None:
    """Store the metadata of one node (all its documents concurrently)."""
    docs = node_documents(path, meta)
    if meta.zarr_format == 2 and not meta.attributes:
        await store.delete(join(path, V2_ATTRS_KEY))
    await store.set_many(docs.items())


async def node_exists(store: Store, path: str) -> bool:
    """Whether any array or group (of any format) is stored at `path`."""
    keys = [join(path, k) for k in (V3_KEY, V2_ARRAY_KEY, V2_GROUP_KEY)]
    answers = await store.get_partial_values([RangeRequest(k) for k in keys])
    return any(a is not None for a in answers)


async def prepare_node(store: Store, path: str, zarr_format: int, *, overwrite: bool) -> None:
    """Make room for a new node at `path` and make sure its parents are groups.

    Without `overwrite` an existing node is an error; with it, the node and everything
    under it is deleted. Missing parents get group metadata, as the specs require.
    """
    if await node_exists(store, path):
        if not overwrite:
            raise NodeExistsError(
                f"an array or group already exists at {path or '/'!r} in {store!r}"
            )
        await store.delete_prefix(f"{path}/" if path else "")
        for key in (V3_KEY, V2_ARRAY_KEY, V2_GROUP_KEY, V2_ATTRS_KEY):
            await store.delete(join(path, key))
    parts = path.split("/") if path else []
    parents = ["/".join(parts[:i]) for i in range(len(parts))]
    present = await store.get_partial_values(
        [RangeRequest(join(p, V3_KEY if zarr_format == 3 else V2_GROUP_KEY)) for p in parents]
    )
    missing = [p for p, data in zip(parents, present, strict=True) if data is None]
    for parent in missing:
        parent_meta = await _existing_node(store, parent)
        if isinstance(parent_meta, ArrayMetadata):
            raise NodeExistsError(f"cannot create {path!r}: its parent {parent!r} is an array")
    await store.set_many(
        (key, doc)
        for parent in missing
        for key, doc in node_documents(parent, GroupMetadata(zarr_format=zarr_format)).items()  # type: ignore[arg-type]
    )


async def _existing_node(store: Store, path: str) -> Node | None:
    try:
        return await read_node(store, path)
    except NodeNotFoundError:
        return None
