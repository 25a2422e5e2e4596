"""Zarr v2 consolidated metadata: the `.zmetadata` document <-> member metadata by path.

`.zmetadata` holds `{"zarr_consolidated_format": 1, "metadata": {key: document}}` where
the keys are the `.zgroup` / `.zarray` / `.zattrs` keys below (and of) the group it
belongs to. (The v3 form lives inside the group's `zarr.json`: see `v3.py`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiozarr.errors import MetadataError
from aiozarr.metadata import v2
from aiozarr.metadata.json import dump, fail, load, show
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata

Node = ArrayMetadata | GroupMetadata
Document = bytes | bytearray | memoryview | str | Mapping[str, Any]

ZMETADATA_KEY = ".zmetadata"
_NODE_NAMES = (".zarray", ".zgroup", ".zattrs")


def _split(key: str) -> tuple[str, str]:
    path, _, name = key.rpartition("/")
    return path, name


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
        path, leaf = _split(name)
        if leaf in _NODE_NAMES:
            by_path.setdefault(path, {})[leaf] = value
    nodes: dict[str, Node] = {}
    for path, parts in by_path.items():
        where = f"{key} ({path or '.'})"
        attrs = parts.get(".zattrs")
        if attrs is not None and not isinstance(attrs, Mapping):
            raise MetadataError(f"{where}: .zattrs must be an object, got {show(attrs)}")
        if ".zarray" in parts:
            nodes[path] = v2.parse_zarray(_mapping(parts[".zarray"], where), where, attrs)
        elif ".zgroup" in parts:
            nodes[path] = v2.parse_zgroup(_mapping(parts[".zgroup"], where), where, attrs)
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
            docs[prefix + ".zarray"] = load(v2.zarray_to_json(node), path)
        else:
            docs[prefix + ".zgroup"] = load(v2.zgroup_to_json(node), path)
        docs[prefix + ".zattrs"] = dict(node.attributes)
    return dump({"metadata": docs, "zarr_consolidated_format": 1}, ZMETADATA_KEY)


def subtree(members: Mapping[str, Node], name: str) -> dict[str, Node]:
    """The members below the member `name`, with paths relative to it."""
    prefix = f"{name}/"
    return {p[len(prefix) :]: m for p, m in members.items() if p.startswith(prefix)}
