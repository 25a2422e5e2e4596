"""Zarr v3 `zarr.json` documents <-> the metadata model.

Reading is strict: every problem raises `MetadataError` naming the document key, the
field, the value and what was expected; unknown data types and chunk grids, and
storage transformers, raise `UnsupportedError`. Chunk grids (`regular`, `rectilinear`)
are read and written by `grids.py`. Writing gives what zarr-python 3 writes.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from aiozarr.errors import AiozarrError, AiozarrWarning, MetadataError, UnsupportedError
from aiozarr.metadata import dtypes, fill_value
from aiozarr.metadata.format_protocol import FIRST, Fetch, Format, Node, Reading, ReadOptions, join
from aiozarr.metadata.grids import chunk_grid_json, parse_chunk_grid
from aiozarr.metadata.json import dump, fail, int_list, is_int, load, require, show
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata, GroupMetadata

Document = bytes | bytearray | memoryview | str | Mapping[str, Any]

_ARRAY_FIELDS = frozenset(
    {
        "zarr_format",
        "node_type",
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "dimension_names",
        "storage_transformers",
    }
)
# zarr-python 3.0 wrote `"consolidated_metadata": null` into every group document
_GROUP_FIELDS = frozenset({"zarr_format", "node_type", "attributes", "consolidated_metadata"})
_SEPARATORS = ("/", ".")
_DEFAULT_SEPARATOR = {"default": "/", "v2": "."}
# zarr-python writes these codecs with an explicit empty configuration
_EMPTY_CONFIGURATION_WRITTEN = frozenset({"vlen-utf8", "vlen-bytes"})


def _check_header(doc: Mapping[str, Any], key: str, node_type: str | None) -> str:
    zarr_format = require(doc, "zarr_format", key)
    if not is_int(zarr_format) or zarr_format != 3:
        fail(key, "zarr_format", "3", zarr_format)
    found = require(doc, "node_type", key)
    if found not in ("array", "group") or (node_type is not None and found != node_type):
        fail(key, "node_type", f'"{node_type}"' if node_type else '"array" or "group"', found)
    return str(found)


def _check_unknown(doc: Mapping[str, Any], known: frozenset[str], key: str) -> dict[str, Any]:
    """The fields of `doc` a reader may ignore, by name; any other unknown one is refused."""
    extra: dict[str, Any] = {}
    for name, value in doc.items():
        if name in known:
            continue
        if isinstance(value, Mapping) and value.get("must_understand") is False:
            extra[name] = value  # the spec: an unknown extension that may be ignored
            continue
        raise MetadataError(
            f'{key}: unknown field "{name}" (only fields that are objects with '
            f'"must_understand": false may be ignored), got {show(value)}'
        )
    return extra


def _named(value: Any, key: str, field: str) -> tuple[str, Mapping[str, Any]]:
    """`{"name": ..., "configuration": {...}}` as (name, configuration)."""
    if isinstance(value, str):
        return value, {}
    allowed = {"name", "configuration", "must_understand"}
    if (
        not isinstance(value, Mapping)
        or not isinstance(value.get("name"), str)
        or set(value) - allowed
    ):
        fail(key, field, 'an object {"name": ..., "configuration": {...}}', value)
    config = value.get("configuration", {})
    if not isinstance(config, Mapping):
        fail(key, f"{field}.configuration", "an object", config)
    return value["name"], config


def chunk_key_encoding_of(value: Any, key: str) -> ChunkKeyEncoding:
    """A v3 `chunk_key_encoding` (its JSON, or a name) as aiozarr's; `key` names the
    document in errors."""
    name, config = _named(value, key, "chunk_key_encoding")
    if name not in _DEFAULT_SEPARATOR:
        raise UnsupportedError(
            f'{key}: field "chunk_key_encoding": unsupported encoding {show(name)} '
            '(expected "default" or "v2")'
        )
    if set(config) - {"separator"}:
        fail(key, "chunk_key_encoding.configuration", 'only the member "separator"', dict(config))
    separator = config.get("separator", _DEFAULT_SEPARATOR[name])
    if separator not in _SEPARATORS:
        fail(key, "chunk_key_encoding.configuration.separator", '"/" or "."', separator)
    return ChunkKeyEncoding(name, separator)


def _codecs(value: Any, key: str, dtype: np.dtype[Any]) -> tuple[CodecMetadata, ...]:
    if not isinstance(value, list):
        fail(key, "codecs", "a non-empty list of codecs", value)
    if not value:
        return _no_codecs(key, dtype)
    codecs = []
    for i, item in enumerate(value):
        name, config = _named(item, key, f"codecs[{i}]")
        codecs.append(CodecMetadata(name, dict(config)))
    return tuple(codecs)


def _no_codecs(key: str, dtype: np.dtype[Any]) -> tuple[CodecMetadata, ...]:
    """A writer quirk: `"codecs": []`. Read as the `bytes` codec where that is unambiguous.

    Fixed-size data with no compressor can only be raw bytes; multi-byte elements are
    taken as little endian (the byte order every v3 writer defaults to). The `bytes`
    codec then checks each chunk's size. Variable-length data has no such default.
    """
    if dtype.hasobject or dtype.kind == "T":
        raise MetadataError(
            f'{key}: field "codecs" is empty, and data type {dtype} has no default '
            'codec (expected e.g. [{"name": "vlen-utf8"}])'
        )
    codec = CodecMetadata("bytes", {"endian": "little"} if dtype.itemsize > 1 else {})
    warnings.warn(
        f'{key}: field "codecs" is an empty list (a writer quirk); '
        f"read as [{show(codec.to_json())}]",
        AiozarrWarning,
        stacklevel=2,
    )
    return (codec,)


def _attributes(doc: Mapping[str, Any], key: str) -> dict[str, Any]:
    attributes = doc.get("attributes", {})
    if not isinstance(attributes, Mapping):
        fail(key, "attributes", "an object", attributes)
    return dict(attributes)


def dimension_names_of(value: Any, ndim: int, key: str) -> tuple[str | None, ...] | None:
    """A `dimension_names` value (a list of strings or nulls, one per dimension, or None)
    as a tuple; `MetadataError` naming `key` for anything else."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(v is None or isinstance(v, str) for v in value):
        fail(key, "dimension_names", "a list of strings or nulls", value)
    if len(value) != ndim:
        fail(key, "dimension_names", f"{ndim} names (one per dimension)", value)
    return tuple(value)


def _storage_transformers(value: Any, key: str) -> None:
    if not isinstance(value, list):
        fail(key, "storage_transformers", "a list", value)
    if value:
        raise UnsupportedError(
            f'{key}: field "storage_transformers": storage transformers are not supported, '
            f"got {show(value)}"
        )


def parse_array(doc: Document, key: str) -> ArrayMetadata:
    """The array metadata in the v3 document `doc` stored at `key`."""
    data = load(doc, key)
    _check_header(data, key, "array")
    return _array(data, key)


def _array(data: Mapping[str, Any], key: str) -> ArrayMetadata:
    extra = _check_unknown(data, _ARRAY_FIELDS, key)
    shape = int_list(require(data, "shape", key), key, "shape", 0)
    data_type = require(data, "data_type", key)
    dtype = dtypes.parse_v3(data_type, key)
    grid_name, grid_config = _named(require(data, "chunk_grid", key), key, "chunk_grid")
    chunk_shape, chunk_grid = parse_chunk_grid(grid_name, grid_config, shape, key)
    encoding = chunk_key_encoding_of(require(data, "chunk_key_encoding", key), key)
    codecs = _codecs(require(data, "codecs", key), key, dtype)
    fill_dtype = _fill_dtype(dtype, dtypes.v3_name(data_type), codecs)
    fill = fill_value.parse_v3(
        require(data, "fill_value", key), fill_dtype, dtypes.v3_name(data_type), key
    )
    if fill_dtype != dtype:
        fill = np.array(fill, dtype=fill_dtype).astype(dtype)[()]
    _storage_transformers(data.get("storage_transformers", []), key)
    return ArrayMetadata(
        shape=shape,
        dtype=dtype,
        chunk_shape=chunk_shape,
        fill_value=fill,
        zarr_format=3,
        codecs=codecs,
        chunk_key_encoding=encoding,
        attributes=_attributes(data, key),
        dimension_names=dimension_names_of(data.get("dimension_names"), len(shape), key),
        data_type=data_type,
        chunk_grid=chunk_grid,
        extra=extra,
    )


def parse_group(doc: Document, key: str) -> GroupMetadata:
    """The group metadata in the v3 document `doc` stored at `key`."""
    data = load(doc, key)
    _check_header(data, key, "group")
    return _group(data, key)


def _group(data: Mapping[str, Any], key: str) -> GroupMetadata:
    extra = _check_unknown(data, _GROUP_FIELDS, key)
    consolidated = data.get("consolidated_metadata")
    if consolidated is not None and not isinstance(consolidated, Mapping):
        fail(key, "consolidated_metadata", "an object or null", consolidated)
    members = None if consolidated is None else _consolidated(consolidated, key)
    attributes = _attributes(data, key)
    return GroupMetadata(3, attributes, consolidated=members, extra=extra)


def _consolidated(value: Mapping[str, Any], key: str) -> dict[str, ArrayMetadata | GroupMetadata]:
    """zarr-python's inline consolidated metadata: every descendant's document by its path."""
    if value.get("kind") != "inline":
        fail(key, "consolidated_metadata.kind", '"inline"', value.get("kind"))
    docs = value.get("metadata")
    if not isinstance(docs, Mapping):
        fail(key, "consolidated_metadata.metadata", "an object of node documents", docs)
    members: dict[str, ArrayMetadata | GroupMetadata] = {}
    for path, doc in docs.items():
        where = f"{key} (consolidated_metadata member {path!r})"
        if not isinstance(doc, Mapping):
            raise MetadataError(f"{where}: expected a node document, got {show(doc)}")
        if _check_header(doc, where, None) == "array":
            members[path] = _array(doc, where)
        else:  # a nested group's own consolidated block repeats what the root lists
            inner = {k: v for k, v in doc.items() if k != "consolidated_metadata"}
            members[path] = _group(inner, where)
    return members


def parse_node(doc: Document, key: str) -> ArrayMetadata | GroupMetadata:
    """The array or group metadata in `doc`, by its `node_type`."""
    data = load(doc, key)
    if _check_header(data, key, None) == "array":
        return _array(data, key)
    return _group(data, key)


def _v3_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype.newbyteorder("<") if dtype.byteorder == ">" or dtype.names else dtype


def _serializer_endian(codecs: list[Any]) -> Any:
    """The `endian` of the `bytes` codec that encodes the elements of the codec list
    `codecs` (JSON; inside a shard's codecs too), or None."""
    for codec in codecs:
        name = codec.get("name") if isinstance(codec, Mapping) else codec
        config = codec.get("configuration") if isinstance(codec, Mapping) else None
        config = config if isinstance(config, Mapping) else {}
        if name == "bytes":
            return config.get("endian")
        if name == "sharding_indexed" and isinstance(config.get("codecs"), list):
            return _serializer_endian(config["codecs"])
    return None


def _fill_dtype(
    dtype: np.dtype[Any], name: str, codecs: tuple[CodecMetadata, ...]
) -> np.dtype[Any]:
    """The dtype of a fill value's packed bytes: a legacy `structured` type's base64
    fill is in the `bytes` codec's byte order (the structured data type's spec)."""
    if name == "structured" and _serializer_endian([c.to_json() for c in codecs]) == "big":
        return dtype.newbyteorder(">")
    return dtype


def data_type_json(meta: ArrayMetadata) -> Any:
    """The `data_type` to write: the document's own when it still describes `meta.dtype`."""
    if meta.data_type is not None:
        try:
            if dtypes.parse_v3(meta.data_type, "data_type") == _v3_dtype(meta.dtype):
                return meta.data_type
        except AiozarrError:
            pass
    return dtypes.to_v3(meta.dtype)


def _codec_json(codec: CodecMetadata) -> dict[str, Any]:
    doc = codec.to_json()
    if codec.name in _EMPTY_CONFIGURATION_WRITTEN and "configuration" not in doc:
        doc["configuration"] = {}
    return doc


def array_to_json(meta: ArrayMetadata, key: str = "zarr.json") -> bytes:
    """The `zarr.json` document of a v3 array, field for field as zarr-python writes it;
    errors name `key`."""
    data_type = data_type_json(meta)
    doc: dict[str, Any] = {
        "shape": list(meta.shape),
        "data_type": data_type,
        "chunk_grid": chunk_grid_json(meta),
        "chunk_key_encoding": {
            "name": meta.chunk_key_encoding.name,
            "configuration": {"separator": meta.chunk_key_encoding.separator},
        },
        "fill_value": fill_value.to_v3_json(
            meta.fill_value,
            _fill_dtype(_v3_dtype(meta.dtype), dtypes.v3_name(data_type), meta.codecs),
            dtypes.v3_name(data_type),
        ),
        "codecs": [_codec_json(c) for c in meta.codecs],
        "attributes": dict(meta.attributes),
    }
    if meta.dimension_names is not None:
        doc["dimension_names"] = list(meta.dimension_names)
    doc.update(zarr_format=3, node_type="array", storage_transformers=[])
    doc.update(_extra(meta.extra, doc))
    return dump(doc, key)


def group_to_json(meta: GroupMetadata, key: str = "zarr.json") -> bytes:
    """The `zarr.json` document of a v3 group (with its consolidated metadata, if any);
    errors name `key`."""
    doc: dict[str, Any] = {"attributes": dict(meta.attributes), "zarr_format": 3}
    if meta.consolidated is not None:
        doc["consolidated_metadata"] = consolidated_json(meta.consolidated)
    doc["node_type"] = "group"
    doc.update(_extra(meta.extra, doc))
    return dump(doc, key)


def _extra(extra: Mapping[str, Any], doc: Mapping[str, Any]) -> dict[str, Any]:
    """The ignorable fields read with a node, as they were (none over a field written)."""
    return {name: value for name, value in extra.items() if name not in doc}


def consolidated_json(members: Mapping[str, ArrayMetadata | GroupMetadata]) -> dict[str, Any]:
    """zarr-python's inline `consolidated_metadata` object for `members` (path -> metadata)."""
    docs: dict[str, Any] = {}
    for path in sorted(members):
        node = members[path]
        if isinstance(node, ArrayMetadata):
            docs[path] = json.loads(array_to_json(node))
        else:
            group = GroupMetadata(3, node.attributes, extra=node.extra)
            docs[path] = json.loads(group_to_json(group))
    return {"kind": "inline", "must_understand": False, "metadata": docs}


ZARR_JSON = "zarr.json"


class V3Format(Format):
    """Zarr v3: a node's metadata is its `zarr.json`; chunks lie below the node's path."""

    name: ClassVar[str] = "Zarr v3"
    zarr_format: ClassVar[int | None] = 3
    asked_by: ClassVar[frozenset[int | None]] = frozenset({None, 3})
    stage: ClassVar[int] = FIRST
    writable: ClassVar[bool] = True

    def read(self, path: str, options: ReadOptions) -> Reading:
        (stored,) = yield Fetch((join(path, ZARR_JSON),))
        if stored is None:
            return None
        node = parse_node(stored.json(), stored.key)
        if isinstance(node, GroupMetadata) and not options.use_consolidated:
            node = dataclasses.replace(node, consolidated=None)
        return node

    def owns(self, meta: Node) -> bool:
        return meta.zarr_format == 3

    def node_keys(self, path: str) -> tuple[str, ...]:
        return (join(path, ZARR_JSON),)

    def group_key(self, path: str) -> str:
        return join(path, ZARR_JSON)

    def metadata_key(self, path: str, meta: ArrayMetadata) -> str:
        return join(path, ZARR_JSON)

    def documents(self, path: str, meta: Node) -> dict[str, bytes]:
        key = join(path, ZARR_JSON)
        if isinstance(meta, ArrayMetadata):
            return {key: array_to_json(meta, key)}
        return {key: group_to_json(meta, key)}

    def consolidated_documents(
        self, path: str, group: GroupMetadata, members: Mapping[str, Node]
    ) -> dict[str, bytes]:
        """The group's `zarr.json`, with its members inline (`consolidated_metadata`)."""
        return self.documents(path, dataclasses.replace(group, consolidated=members))

    def to_dict(self, meta: Node) -> dict[str, Any]:
        doc = array_to_json(meta) if isinstance(meta, ArrayMetadata) else group_to_json(meta)
        return dict(json.loads(doc))

    def not_found(self, path: str) -> str | None:
        return f"{join(path, ZARR_JSON)} missing"


FORMAT = V3Format()
