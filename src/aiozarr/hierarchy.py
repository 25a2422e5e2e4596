"""Finding, reading and writing node metadata (arrays and groups) in a store.

Format detection costs one request for v3 (`zarr.json`) and one more batch, with
every v2 key (and `.zmetadata`) fetched concurrently, when there is no `zarr.json`;
v1 and the 2020 v3 draft cost one batch more, only when the v2 keys all miss.
v1 and draft nodes are read only (chunks may be written; metadata may not).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any, Literal

import anyio

from aiozarr import config
from aiozarr.errors import (
    MetadataError,
    NodeExistsError,
    NodeNotFoundError,
    ValueTooLargeError,
    unwrap_group,
)
from aiozarr.metadata import consolidated, v1, v2, v3, v3draft
from aiozarr.metadata.consolidated import ZMETADATA_KEY
from aiozarr.metadata.json import load
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.storage.base import RangeRequest, Store

Node = ArrayMetadata | GroupMetadata

V3_KEY = "zarr.json"
V2_ARRAY_KEY = ".zarray"
V2_GROUP_KEY = ".zgroup"
V2_ATTRS_KEY = ".zattrs"
V1_META_KEY = "meta"
V1_ATTRS_KEY = "attrs"


class NodeLocation:
    """Where an array or group lives: its store and its path in it."""

    _store: Store
    _path: str

    @property
    def store(self) -> Store:
        return self._store

    @property
    def path(self) -> str:
        return self._path

    @property
    def name(self) -> str:
        """The absolute name, `/path`."""
        return "/" + self._path


def join(path: str, name: str) -> str:
    """`path/name`, where either may be empty."""
    return f"{path}/{name}" if path else name


def normalize_path(path: str) -> str:
    """A node path without leading/trailing slashes ("" is the root)."""
    return "/".join(part for part in path.split("/") if part)


def metadata_request(key: str) -> RangeRequest:
    """The read of one metadata document: whole, at most `max_metadata_bytes`."""
    return RangeRequest(key, None, config.get().max_metadata_bytes)


@contextlib.contextmanager
def metadata_bound() -> Iterator[None]:
    """Say which setting bounds a metadata document that was refused as too large."""
    try:
        yield
    except ValueTooLargeError as exc:
        raise ValueTooLargeError(
            f"{exc} (metadata documents are limited by the max_metadata_bytes setting, "
            "AIOZARR_MAX_METADATA_BYTES)"
        ) from None


async def get_document(store: Store, key: str) -> object | None:
    """One metadata document's bytes (None if missing), refused past `max_metadata_bytes`."""
    with metadata_bound():
        return await store.get(key, max_bytes=config.get().max_metadata_bytes)


async def get_documents(store: Store, keys: list[str]) -> list[Any]:
    """`get_document` of each key, in one batch."""
    with metadata_bound():
        return await store.get_partial_values([metadata_request(k) for k in keys])


async def read_node(
    store: Store,
    path: str,
    zarr_format: Literal[1, 2, 3] | None = None,
    *,
    use_consolidated: bool = True,
    array_only: bool = False,
) -> Node:
    """The metadata of the node at `path`; `NodeNotFoundError` when there is none.

    Without `zarr_format`: `zarr.json` first (one request for v3), then every v2 key
    and `.zmetadata` in one concurrent batch, then (only when those all miss) the v1
    keys and the 2020 draft's documents in one more batch. A group with consolidated
    metadata comes back with its members' metadata (unless `use_consolidated` is False).
    With `array_only` (the caller opens an array) a v2 read asks for `.zarray` and
    `.zattrs` alone, and for `.zgroup` only when there is no `.zarray`.
    """
    use_consolidated = use_consolidated and not array_only
    if zarr_format in (None, 3):
        key = join(path, V3_KEY)
        data = await get_document(store, key)
        if data is not None:
            return await _v3_node(store, path, data, key, use_consolidated)
        if zarr_format == 3:
            raise NodeNotFoundError(
                f"no Zarr v3 array or group at {path or '/'!r} ({key} missing) in {store!r}"
            )
    if zarr_format in (None, 2):
        node = await _read_v2(store, path, use_consolidated, array_only)
        if node is not None:
            return node
    if zarr_format in (None, 1):
        node = await _read_v1_or_draft(store, path, zarr_format == 1)
        if node is not None:
            return node
    raise NodeNotFoundError(f"no Zarr array or group at {path or '/'!r} in {store!r}")


async def _v3_node(
    store: Store, path: str, data: object, key: str, use_consolidated: bool = True
) -> Node:
    """The node whose `zarr.json` (at `key`) holds `data`."""
    doc = json_load(data, key)
    if v3draft.is_entry_point(doc):
        return await _read_draft(store, path, "", v3draft.parse_entry_point(doc, key))
    node = v3.parse_node(doc, key)
    if isinstance(node, GroupMetadata) and not use_consolidated:
        node = dataclasses.replace(node, consolidated=None)
    return node


#: A v2 node's documents, as a group's listed children are read (`read_members`).
_V2_MEMBER_KEYS = (V2_ARRAY_KEY, V2_ATTRS_KEY, V2_GROUP_KEY, ZMETADATA_KEY)


async def read_members(
    store: Store, path: str, names: list[str], zarr_format: Literal[2, 3]
) -> dict[str, Node | None]:
    """The metadata of each child `names` of the group at `path` (None: no node there),
    read in one batch however many names there are: each child's `zarr.json` (v3), or
    its `.zarray`, `.zattrs`, `.zgroup` and `.zmetadata` (v2), as `read_node` with that
    format would read them one child at a time."""
    per = (V3_KEY,) if zarr_format == 3 else _V2_MEMBER_KEYS
    children = [join(path, name) for name in names]
    keys = [join(child, key) for child in children for key in per]
    answers = await get_documents(store, keys) if keys else []
    found: dict[str, Node | None] = {}
    for i, (name, child) in enumerate(zip(names, children, strict=True)):
        docs = dict(zip(per, answers[i * len(per) : (i + 1) * len(per)], strict=True))
        if zarr_format == 3:
            data = docs[V3_KEY]
            key = join(child, V3_KEY)
            found[name] = None if data is None else await _v3_node(store, child, data, key)
        else:
            found[name] = parse_v2(child, docs)
    return found


def json_load(data: object, key: str) -> dict[str, Any]:
    """A stored JSON object document."""
    return load(bytes(memoryview(data)), key)  # type: ignore[arg-type]


async def _read_v2(
    store: Store, path: str, use_consolidated: bool, array_only: bool
) -> Node | None:
    names = [V2_ARRAY_KEY, V2_ATTRS_KEY]
    if not array_only:
        names += [V2_GROUP_KEY, ZMETADATA_KEY] if use_consolidated else [V2_GROUP_KEY]
    answers = await get_documents(store, [join(path, n) for n in names])
    found = dict(zip(names, answers, strict=True))
    node = parse_v2(path, found)
    if node is None and array_only:
        # An array open that missed asks once more, to say when the node is a group.
        found[V2_GROUP_KEY] = await get_document(store, join(path, V2_GROUP_KEY))
        node = parse_v2(path, found)
    return node


def parse_v2(path: str, found: dict[str, object | None]) -> Node | None:
    """The v2 node at `path` from its documents read (missing or not asked: None)."""
    keys = {name: join(path, name) for name in _V2_MEMBER_KEYS}
    zattrs = found.get(V2_ATTRS_KEY)
    attrs = None if zattrs is None else json_load(zattrs, keys[V2_ATTRS_KEY])
    zarray = found.get(V2_ARRAY_KEY)
    if zarray is not None:
        return v2.parse_zarray(bytes(memoryview(zarray)), keys[V2_ARRAY_KEY], attrs)  # type: ignore[arg-type]
    zgroup = found.get(V2_GROUP_KEY)
    if zgroup is None:
        return None
    group = v2.parse_zgroup(bytes(memoryview(zgroup)), keys[V2_GROUP_KEY], attrs)  # type: ignore[arg-type]
    zmetadata = found.get(ZMETADATA_KEY)
    if zmetadata is not None:
        nodes = consolidated.parse_zmetadata(
            json_load(zmetadata, keys[ZMETADATA_KEY]), keys[ZMETADATA_KEY]
        )
        nodes.pop("", None)
        group = dataclasses.replace(group, consolidated=nodes)
    return group


async def _read_v1_or_draft(store: Store, path: str, v1_only: bool) -> Node | None:
    keys = [join(path, V1_META_KEY), join(path, V1_ATTRS_KEY)]
    draft = bool(path) and not v1_only  # a draft root was seen with the first zarr.json
    if draft:
        keys += [*v3draft.node_keys(path), V3_KEY]
    found = await get_documents(store, keys)
    if found[0] is not None:
        attrs = None if found[1] is None else json_load(found[1], keys[1])
        return v1.parse_meta(json_load(found[0], keys[0]), keys[0], attrs)
    if not draft or found[4] is None:
        return None
    root_doc = json_load(found[4], V3_KEY)
    if not v3draft.is_entry_point(root_doc):
        return None  # a v3 root: the node is missing (or an implicit v3 group)
    entry = v3draft.parse_entry_point(root_doc, V3_KEY)
    if entry.metadata_key_suffix != ".json":
        return await _read_draft(store, "", path, entry)
    return await _draft_node(store, "", path, found[2], found[3])


async def _read_draft(store: Store, root: str, path: str, entry: v3draft.EntryPoint) -> Node:
    """The node at `path` of the draft hierarchy whose entry point is at `root`."""
    keys = [join(root, k) for k in v3draft.node_keys(path, entry.metadata_key_suffix)]
    array, group = await get_documents(store, keys)
    node = await _draft_node(store, root, path, array, group, entry.metadata_key_suffix)
    if node is None:
        raise NodeNotFoundError(f"no array or group at {path or '/'!r} in draft {store!r}")
    return node


async def _draft_node(
    store: Store,
    root: str,
    path: str,
    array: object | None,
    group: object | None,
    suffix: str = ".json",
) -> Node | None:
    array_key, group_key = (join(root, k) for k in v3draft.node_keys(path, suffix))
    if array is not None:
        return v3draft.parse_array(json_load(array, array_key), array_key)
    members = await _draft_members(store, root, path, suffix)
    if group is None and not members and path:
        return None  # neither an explicit nor an implicit group
    meta = v3draft.parse_group(None if group is None else json_load(group, group_key), group_key)
    return dataclasses.replace(meta, consolidated=members)


async def _draft_members(store: Store, root: str, path: str, suffix: str) -> dict[str, Node]:
    """Every node below a draft group by relative path (one listing, one batch of reads)."""
    base = join(root, f"{v3draft.META_ROOT}/{path}" if path else v3draft.META_ROOT) + "/"
    kinds = {f".array{suffix}": "array", f".group{suffix}": "group"}
    keys = [k async for k in store.list_prefix(base) if any(k.endswith(e) for e in kinds)]
    docs = await get_documents(store, keys)
    members: dict[str, Node] = {}
    for key, doc in zip(keys, docs, strict=True):
        if doc is None:
            continue
        ending = next(e for e in kinds if key.endswith(e))
        rel = key[len(base) : -len(ending)]
        parse = v3draft.parse_array if kinds[ending] == "array" else v3draft.parse_group
        members[rel] = parse(json_load(doc, key), key)
        parts = rel.split("/")
        for i in range(1, len(parts)):  # implicit groups above it
            members.setdefault("/".join(parts[:i]), v3draft.parse_group(None, key))
    return members


def consolidated_member(group: GroupMetadata, name: str) -> Node | None:
    """The member `name` (a relative path) as the group's consolidated metadata gives it."""
    members = group.consolidated
    if members is None or name not in members:
        return None
    node = members[name]
    if isinstance(node, GroupMetadata):
        node = dataclasses.replace(node, consolidated=consolidated.subtree(members, name))
    return node


def consolidated_names(group: GroupMetadata) -> list[str] | None:
    """The direct members' names from consolidated metadata, sorted; None without it."""
    if group.consolidated is None:
        return None
    return sorted(p for p in group.consolidated if "/" not in p)


def metadata_key(path: str, meta: ArrayMetadata) -> str:
    """The key of the document `meta` was read from (named in errors and warnings)."""
    if v3draft.is_draft(meta):
        return v3draft.node_keys(path)[0]
    if meta.zarr_format == 1:
        return join(path, V1_META_KEY)
    return join(path, V3_KEY if meta.zarr_format == 3 else ".zarray")


def chunk_prefix(path: str, meta: ArrayMetadata) -> str:
    """The key prefix of the array's chunks: `path/`, or `data/root/path/` in the draft."""
    if v3draft.is_draft(meta):
        return v3draft.data_prefix(path)
    return f"{path}/" if path else ""


def node_documents(path: str, meta: Node) -> dict[str, bytes]:
    """The keys and documents that store `meta` at `path`."""
    if meta.zarr_format == 3:
        doc = v3.array_to_json(meta) if isinstance(meta, ArrayMetadata) else v3.group_to_json(meta)
        return {join(path, V3_KEY): doc}
    if meta.zarr_format != 2:
        raise MetadataError(
            f"cannot write Zarr format {meta.zarr_format} metadata (read only); "
            "aiozarr.migrate it to Zarr v2 or v3"
        )
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
    if v3draft.is_draft(meta):
        raise MetadataError(
            f"cannot write metadata into a 2020 v3 draft hierarchy ({path or '/'!r}); "
            "aiozarr.migrate it to Zarr v3 first"
        )
    docs = node_documents(path, meta)
    if meta.zarr_format == 2 and not meta.attributes:
        await store.delete(join(path, V2_ATTRS_KEY))
    await store.set_many(docs.items())


async def prepare_node(store: Store, path: str, zarr_format: int, *, overwrite: bool) -> None:
    """Make room for a new node at `path` and make sure its parents are groups.

    Without `overwrite` an existing node is an error; with it, everything under `path`
    is deleted, node or not, as zarr-python does: chunks an earlier array left without
    its metadata would otherwise be read as the new array's. Missing parents get group
    metadata, as the specs require. Whether the node exists and which parents are
    missing is asked in one batch; with `overwrite` that batch and the deleting run at
    once (a store that cannot list deletes only under a node it finds).
    """
    parts = path.split("/") if path else []
    parents = ["/".join(parts[:i]) for i in range(len(parts))]
    parent_key = V3_KEY if zarr_format == 3 else V2_GROUP_KEY
    parent_keys = [join(p, parent_key) for p in parents]
    under = f"{path}/" if path else ""  # the metadata keys too
    if overwrite and store.listable:
        with unwrap_group():
            async with anyio.create_task_group() as tg:
                tg.start_soon(store.delete_prefix, under)
                found = await get_documents(store, parent_keys)
    else:
        node_keys = [join(path, k) for k in (V3_KEY, V2_ARRAY_KEY, V2_GROUP_KEY)]  # any format
        found = await get_documents(store, node_keys + parent_keys)
        if any(data is not None for data in found[: len(node_keys)]):
            if not overwrite:
                raise NodeExistsError(
                    f"an array or group already exists at {path or '/'!r} in {store!r}"
                )
            await store.delete_prefix(under)
        found = found[len(node_keys) :]
    missing = [p for p, data in zip(parents, found, strict=True) if data is None]
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
