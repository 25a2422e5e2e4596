"""Zarr v2 `.zarray` / `.zgroup` / `.zattrs` documents <-> the metadata model.

The dtype keeps its byte order (`>f8` stays big-endian); `compressor`, `filters` and
`order` go to the model's v2 fields and `codecs` stays empty. `dimension_separator`
becomes the `v2` chunk key encoding. Writing gives what zarr-python writes.

Consolidated metadata is the `.zmetadata` document: `{"zarr_consolidated_format": 1,
"metadata": {key: document}}` where the keys are the `.zgroup` / `.zarray` / `.zattrs`
keys below (and of) the group it belongs to. (The v3 form lives inside the group's
`zarr.json`: see `v3.py`.)

`FORMAT` is the format: `.zarray` or `.zgroup`, with `.zattrs`, read in one batch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from aiozarr.errors import MetadataError
from aiozarr.metadata import dtypes, fill_value
from aiozarr.metadata.format_protocol import (
    FIRST,
    SECOND,
    Fetch,
    Format,
    Node,
    Reading,
    ReadOptions,
    join,
)
from aiozarr.metadata.json import dump, fail, int_list, is_int, load, require, show
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, GroupMetadata

Document = bytes | bytearray | memoryview | str | Mapping[str, Any]


def _check_format(doc: Mapping[str, Any], key: str) -> None:
    zarr_format = require(doc, "zarr_format", key)
    if not is_int(zarr_format) or zarr_format != 2:
        fail(key, "zarr_format", "2", zarr_format)


def _codec_config(value: Any, key: str, field: str) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not isinstance(value.get("id"), str):
        fail(key, field, 'a numcodecs configuration {"id": ..., ...}', value)
    return dict(value)


def _attrs(attrs: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    if attrs is None:
        return {}
    if not isinstance(attrs, Mapping):
        raise MetadataError(f"{key}: attributes must be a JSON object, got {show(attrs)}")
    return dict(attrs)


def parse_zarray(doc: Document, key: str, attrs: Mapping[str, Any] | None = None) -> ArrayMetadata:
    """The array metadata in the `.zarray` document `doc` (and its `.zattrs`, decoded)."""
    data = load(doc, key)
    _check_format(data, key)
    # Other fields are ignored, as the v2 spec asks (VirtualiZarr writes "attributes",
    # which zarr-python ignores too: the attributes are `.zattrs`).
    shape = int_list(require(data, "shape", key), key, "shape", 0)
    chunks = int_list(require(data, "chunks", key), key, "chunks", 1)
    if len(chunks) != len(shape):
        fail(key, "chunks", f"{len(shape)} chunk lengths (one per dimension)", list(chunks))
    dtype = dtypes.parse_v2(require(data, "dtype", key), key)
    order = require(data, "order", key)
    if order not in ("C", "F"):
        fail(key, "order", '"C" or "F"', order)
    compressor = data.get("compressor")
    if compressor is not None:
        compressor = _codec_config(compressor, key, "compressor")
    filters = data.get("filters")
    if filters is not None:
        if not isinstance(filters, list):
            fail(key, "filters", "a list of numcodecs configurations or null", filters)
        filters = tuple(_codec_config(f, key, f"filters[{i}]") for i, f in enumerate(filters))
    fill = fill_value.parse_v2(require(data, "fill_value", key), dtype, key, filters)
    separator = data.get("dimension_separator", ".")
    if separator not in ("/", "."):
        fail(key, "dimension_separator", '"." or "/"', separator)
    return ArrayMetadata(
        shape=shape,
        dtype=dtype,
        chunk_shape=chunks,
        fill_value=fill,
        zarr_format=2,
        codecs=(),
        chunk_key_encoding=ChunkKeyEncoding("v2", separator),
        attributes=_attrs(attrs, key),
        order=order,
        filters=filters,
        compressor=compressor,
    )


def parse_zgroup(doc: Document, key: str, attrs: Mapping[str, Any] | None = None) -> GroupMetadata:
    """The group metadata in the `.zgroup` document `doc` (and its `.zattrs`, decoded)."""
    data = load(doc, key)
    _check_format(data, key)
    # The v2 spec allows no other field here (unlike `.zarray`). zarr-python 3 writes
    # "consolidated_metadata" into the .zgroup documents of .zmetadata.
    unknown = sorted(set(data) - {"zarr_format", "consolidated_metadata"})
    if unknown:
        raise MetadataError(f'{key}: unknown field "{unknown[0]}", got {show(data[unknown[0]])}')
    return GroupMetadata(zarr_format=2, attributes=_attrs(attrs, key))


def zarray_to_json(meta: ArrayMetadata) -> bytes:
    """The `.zarray` document of a v2 array, field for field as zarr-python writes it."""
    if meta.chunk_grid is not None:
        raise MetadataError(
            "Zarr v2 has no rectilinear chunk grid: write this array as v3, "
            "or give it a regular chunk shape"
        )
    doc = {
        "shape": list(meta.shape),
        "chunks": list(meta.chunk_shape),
        "dtype": dtypes.to_v2(meta.dtype),
        "fill_value": fill_value.to_v2_json(meta.fill_value, meta.dtype),
        "order": meta.order,
        "filters": None if meta.filters is None else [dict(f) for f in meta.filters],
        "dimension_separator": meta.chunk_key_encoding.separator,
        "compressor": None if meta.compressor is None else dict(meta.compressor),
        "zarr_format": 2,
    }
    return dump(doc)


def zgroup_to_json(meta: GroupMetadata) -> bytes:
    """The `.zgroup` document of a v2 group."""
    return dump({"zarr_format": 2})


def attrs_to_json(attrs: Mapping[str, Any], key: str = ".zattrs") -> bytes:
    """The `.zattrs` document holding `attrs` (stored at `key`, which errors name)."""
    return dump(dict(attrs), key)


# -- consolidated metadata (.zmetadata) --------------------------------------------------------

ZARRAY, ZGROUP, ZATTRS, ZMETADATA_KEY = ".zarray", ".zgroup", ".zattrs", ".zmetadata"
_NODE_NAMES = (ZARRAY, ZGROUP, ZATTRS)


def parse_zmetadata(doc: Document, key: str) -> dict[str, Node]:
    """Every node in a `.zmetadata` document by its path relative to the group ("" = itself)."""
    data = load(doc, key)
    if data.get("zarr_consolidated_format") != 1:
        fail(key, "zarr_consolidated_format", "1", data.get("zarr_consolidated_format"))
    docs = data.get("metadata")
    if not isinstance(docs, Mapping):
        fail(key, "metadata", "an object of documents by key", docs)
    by_path: dict[str, dict[str, Any]] = {}
    for name, value in docs.items():
        path, _, leaf = name.rpartition("/")
        if leaf in _NODE_NAMES:
            by_path.setdefault(path, {})[leaf] = value
    nodes: dict[str, Node] = {}
    for path, parts in by_path.items():
        where = f"{key} ({path or '.'})"
        attrs = parts.get(ZATTRS)
        if attrs is not None and not isinstance(attrs, Mapping):
            raise MetadataError(f"{where}: .zattrs must be an object, got {show(attrs)}")
        if ZARRAY in parts:
            nodes[path] = parse_zarray(_mapping(parts[ZARRAY], where), where, attrs)
        elif ZGROUP in parts:
            nodes[path] = parse_zgroup(_mapping(parts[ZGROUP], where), where, attrs)
    return nodes


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if isinstance(value, str):  # some writers nested the documents as JSON text
        return load(value, where)
    if not isinstance(value, Mapping):
        raise MetadataError(f"{where}: expected a metadata document, got {show(value)}")
    return value


def zmetadata_json(nodes: Mapping[str, Node]) -> bytes:
    """The `.zmetadata` document for `nodes` (path relative to the group -> v2 metadata)."""
    docs: dict[str, Any] = {}
    for path in sorted(nodes):
        node = nodes[path]
        prefix = f"{path}/" if path else ""
        if isinstance(node, ArrayMetadata):
            docs[prefix + ZARRAY] = load(zarray_to_json(node), path)
        else:
            docs[prefix + ZGROUP] = load(zgroup_to_json(node), path)
        docs[prefix + ZATTRS] = dict(node.attributes)
    return dump({"metadata": docs, "zarr_consolidated_format": 1}, ZMETADATA_KEY)


# -- the format ---------------------------------------------------------------------------------


def consolidated_group(path: str, zmetadata: object) -> GroupMetadata | None:
    """The group at `path` from its `.zmetadata` alone (its own `.zgroup` and `.zattrs`
    are in it), its members' metadata attached; None when it holds no group document
    for the group itself."""
    key = join(path, ZMETADATA_KEY)
    nodes = parse_zmetadata(_json(zmetadata, key), key)
    group = nodes.pop("", None)
    if not isinstance(group, GroupMetadata):
        return None
    return dataclasses.replace(group, consolidated=nodes)


def parse_documents(path: str, found: Mapping[str, object | None]) -> Node | None:
    """The v2 node at `path` from its documents read, by name (`.zarray`, `.zattrs`,
    `.zgroup`, `.zmetadata`; missing or not asked for: None); None when it has none."""
    zattrs = found.get(ZATTRS)
    attrs = None if zattrs is None else _json(zattrs, join(path, ZATTRS))
    zarray = found.get(ZARRAY)
    if zarray is not None:
        return parse_zarray(_bytes(zarray), join(path, ZARRAY), attrs)
    zgroup = found.get(ZGROUP)
    if zgroup is None:
        return None
    group = parse_zgroup(_bytes(zgroup), join(path, ZGROUP), attrs)
    zmetadata = found.get(ZMETADATA_KEY)
    if zmetadata is not None:
        key = join(path, ZMETADATA_KEY)
        nodes = parse_zmetadata(_json(zmetadata, key), key)
        nodes.pop("", None)
        group = dataclasses.replace(group, consolidated=nodes)
    return group


def _bytes(data: object) -> bytes:
    return bytes(memoryview(data))  # type: ignore[arg-type]


def _json(data: object, key: str) -> dict[str, Any]:
    return load(_bytes(data), key)


def node_dict(meta: Node) -> dict[str, Any]:
    """The node's `.zarray` (or `.zgroup`) document with its `attributes`, as zarr-python's
    v2 `to_dict()` gives it."""
    if isinstance(meta, ArrayMetadata):
        doc = dict(json.loads(zarray_to_json(meta)))
    else:
        doc = dict(json.loads(zgroup_to_json(meta)))
    doc["attributes"] = dict(meta.attributes)
    return doc


class V2Format(Format):
    """Zarr v2: `.zarray` or `.zgroup`, attributes in `.zattrs`, consolidated metadata in a
    group's `.zmetadata`; chunks lie below the node's path."""

    name: ClassVar[str] = "Zarr v2"
    zarr_format: ClassVar[int | None] = 2
    asked_by: ClassVar[frozenset[int | None]] = frozenset({None, 2})
    stage: ClassVar[int] = FIRST
    writable: ClassVar[bool] = True

    def read(self, path: str, options: ReadOptions) -> Reading:
        """The node's documents in one batch at the second stage; an array open asks for
        `.zarray` and `.zattrs` alone, and for `.zgroup` only when there is no `.zarray`
        (to say it is a group). A node being opened as a group asks for its `.zmetadata`
        first, beside v3's `zarr.json`: a consolidated group is all in it, its own
        documents included, so it opens in that one round trip (its metadata as
        consolidated, as zarr-python reads it); members read beside each other ask for it
        in their one batch."""
        names = [ZARRAY, ZATTRS] if options.array_only else [ZARRAY, ZATTRS, ZGROUP]
        if options.use_consolidated and not options.array_only:
            if options.opening:
                (zmetadata,) = yield Fetch((join(path, ZMETADATA_KEY),))
                if zmetadata is not None:
                    group = consolidated_group(path, zmetadata.data)
                    if group is not None:
                        return group
            else:
                names.append(ZMETADATA_KEY)
        answers = yield Fetch(tuple(join(path, n) for n in names), stage=SECOND)
        found = {n: None if a is None else a.data for n, a in zip(names, answers, strict=True)}
        node = parse_documents(path, found)
        if node is None and options.array_only:
            (zgroup,) = yield Fetch((join(path, ZGROUP),))
            found[ZGROUP] = None if zgroup is None else zgroup.data
            node = parse_documents(path, found)
        return node

    def owns(self, meta: Node) -> bool:
        return meta.zarr_format == 2

    def node_keys(self, path: str) -> tuple[str, ...]:
        return join(path, ZARRAY), join(path, ZGROUP)

    def group_key(self, path: str) -> str:
        return join(path, ZGROUP)

    def metadata_key(self, path: str, meta: ArrayMetadata) -> str:
        return join(path, ZARRAY)

    def documents(self, path: str, meta: Node) -> dict[str, bytes]:
        docs: dict[str, bytes] = {}
        if isinstance(meta, ArrayMetadata):
            docs[join(path, ZARRAY)] = zarray_to_json(meta)
        else:
            docs[join(path, ZGROUP)] = zgroup_to_json(meta)
        if meta.attributes:
            docs[join(path, ZATTRS)] = attrs_to_json(meta.attributes, join(path, ZATTRS))
        return docs

    def stale_keys(self, path: str, meta: Node) -> tuple[str, ...]:
        return () if meta.attributes else (join(path, ZATTRS),)

    def consolidated_documents(
        self, path: str, group: GroupMetadata, members: Mapping[str, Node]
    ) -> dict[str, bytes]:
        """The group's `.zmetadata`: its own documents and every member's."""
        return {join(path, ZMETADATA_KEY): zmetadata_json({"": group, **members})}

    def to_dict(self, meta: Node) -> dict[str, Any]:
        return node_dict(meta)


FORMAT = V2Format()
