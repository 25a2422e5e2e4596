"""The 2020 Zarr v3 draft (zarr-python 2.11-2.18 `ZARR_V3_EXPERIMENTAL_API`) -> the model.

Read only. The draft keeps an entry point `zarr.json` at the store root (its
`zarr_format` is a URL and it names `metadata_encoding` and `metadata_key_suffix`),
node documents at `meta/root/<path>.array.json` / `.group.json`, and chunks at
`data/root/<path>/c0/0`. An array's `data_type` is a numpy typestr (with byte order),
its chunk bytes are the `chunk_memory_layout`-ordered array passed through the
`compressor`: exactly the v2 encoding, so the model takes the v2 fields (`order`,
`compressor` as a numcodecs configuration) and the v2 codec bridge decodes chunks.
`DraftChunkKeyEncoding` marks the layout (chunk keys `c0/0`, stored under `data/root`).

`FORMAT` is the format: found from the root's entry point, either when the path opened is
the root (its `zarr.json`, asked for as v3's) or, below it, with the v1 keys in the last
batch of detection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.metadata import dtypes, fill_value, v2
from aiozarr.metadata.format_protocol import (
    FIRST,
    LAST,
    Absent,
    Fetch,
    Format,
    ListKeys,
    Node,
    Reading,
    ReadOptions,
    Step,
    Stored,
    join,
)
from aiozarr.metadata.json import fail, int_list, load, require, show
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, GroupMetadata

Document = bytes | bytearray | memoryview | str | Mapping[str, Any]

PROTOCOL = "https://purl.org/zarr/spec/protocol/core/3.0"
_CODEC_URI = "https://purl.org/zarr/spec/codec/"
META_ROOT = "meta/root"
DATA_ROOT = "data/root"
_CORE_NAMES = {"bool": "|b1", "i1": "|i1", "u1": "|u1"}


@dataclass(frozen=True)
class DraftChunkKeyEncoding(ChunkKeyEncoding):
    """Draft chunk keys: `c` then the coordinates joined by the separator (`c0/0`, `c`)."""

    def encode(self, chunk_coords: tuple[int, ...]) -> str:
        return "c" + self.separator.join(map(str, chunk_coords))


@dataclass(frozen=True)
class EntryPoint:
    """The draft's root `zarr.json`: how node documents are encoded and named."""

    metadata_key_suffix: str = ".json"


def is_entry_point(doc: Mapping[str, Any]) -> bool:
    """Whether a decoded `zarr.json` is the draft's entry point rather than a v3 node."""
    return "metadata_encoding" in doc or (
        isinstance(doc.get("zarr_format"), str) and "node_type" not in doc
    )


def _check_extensions(value: Any, key: str) -> None:
    if not isinstance(value, list):
        fail(key, "extensions", "a list", value)
    for item in value:
        if not isinstance(item, Mapping) or item.get("must_understand", True) is not False:
            raise UnsupportedError(f'{key}: field "extensions": unsupported extension {show(item)}')


def parse_entry_point(doc: Document, key: str = "zarr.json") -> EntryPoint:
    """The entry point document; a non-JSON metadata encoding raises `UnsupportedError`."""
    data = load(doc, key)
    encoding = require(data, "metadata_encoding", key)
    if encoding != PROTOCOL:
        raise UnsupportedError(
            f'{key}: field "metadata_encoding": unsupported encoding {show(encoding)}'
        )
    suffix = data.get("metadata_key_suffix", ".json")
    if not isinstance(suffix, str):
        fail(key, "metadata_key_suffix", "a string", suffix)
    _check_extensions(data.get("extensions", []), key)
    return EntryPoint(metadata_key_suffix=suffix)


def node_keys(path: str, suffix: str = ".json") -> tuple[str, str]:
    """The keys of the array and group documents of the node at `path`."""
    base = f"{META_ROOT}/{path}" if path else META_ROOT
    return f"{base}.array{suffix}", f"{base}.group{suffix}"


def data_prefix(path: str) -> str:
    """Where the chunks of the draft array at `path` live ("data/root/<path>/")."""
    return f"{DATA_ROOT}/{path}/" if path else f"{DATA_ROOT}/"


def _dtype(value: Any, key: str) -> np.dtype[Any]:
    if isinstance(value, Mapping):  # an extension data type: its numpy typestr, or the fallback
        typestr = value.get("type")
        try:
            return dtypes.parse_v2(typestr, key, "data_type.type")
        except MetadataError:
            if value.get("fallback") is None:
                raise
            return _dtype(value["fallback"], key)
    if isinstance(value, str) and value in _CORE_NAMES:
        value = _CORE_NAMES[value]
    if isinstance(value, str) and value.startswith("r") and value[1:].isdigit():
        bits = int(value[1:])
        if bits % 8 == 0 and bits:
            return np.dtype(f"V{bits // 8}")
    return dtypes.parse_v2(value, key, "data_type")


def _fill(value: Any, dtype: np.dtype[Any], key: str) -> Any:
    if isinstance(value, str) and value[:2] in ("0x", "0b") and dtype.kind in "biufc":
        try:
            bits = int(value, 16 if value[1] == "x" else 2)
            raw = bits.to_bytes(dtype.itemsize, "big")
        except (ValueError, OverflowError):
            fail(key, "fill_value", f"{dtype.itemsize * 8} bits in hex or binary", value)
        return np.frombuffer(raw, dtype=dtype.newbyteorder(">"))[0].astype(dtype)[()]
    if value == "+Infinity":
        value = "Infinity"
    return fill_value.parse_v2(value, dtype, key)


def compressor_config(value: Any, key: str) -> dict[str, Any] | None:
    """A draft `compressor` (`{"codec": <URI>, "configuration": {...}}`) as numcodecs config."""
    if value is None:
        return None
    codec = value.get("codec") if isinstance(value, Mapping) else None
    if not isinstance(codec, str) or not codec.startswith(_CODEC_URI):
        fail(key, "compressor", f'{{"codec": "{_CODEC_URI}<name>/1.0", ...}}', value)
    name = codec[len(_CODEC_URI) :].split("/")[0]
    config = value.get("configuration", {})
    if not isinstance(config, Mapping):
        fail(key, "compressor.configuration", "an object", config)
    return {"id": name, **config}


def _filters(attributes: dict[str, Any]) -> tuple[dict[str, Any], ...] | None:
    # zarr-python 2.18 stored the filters of a draft array among its attributes
    found = attributes.get("filters")
    if isinstance(found, list) and found and all(isinstance(f, dict) and "id" in f for f in found):
        del attributes["filters"]
        return tuple(found)
    return None


def parse_array(doc: Document, key: str) -> ArrayMetadata:
    """The array metadata in a draft `<path>.array.json` document."""
    data = load(doc, key)
    shape = int_list(require(data, "shape", key), key, "shape", 0)
    dtype = _dtype(require(data, "data_type", key), key)
    grid = require(data, "chunk_grid", key)
    if not isinstance(grid, Mapping) or grid.get("type") != "regular":
        raise UnsupportedError(f'{key}: field "chunk_grid": unsupported chunk grid {show(grid)}')
    chunks = int_list(require(grid, "chunk_shape", key), key, "chunk_grid.chunk_shape", 1)
    if len(chunks) != len(shape):
        fail(key, "chunk_grid.chunk_shape", f"{len(shape)} chunk lengths", list(chunks))
    separator = grid.get("separator", "/")
    if separator not in ("/", "."):
        fail(key, "chunk_grid.separator", '"/" or "."', separator)
    order = require(data, "chunk_memory_layout", key)
    if order not in ("C", "F"):
        fail(key, "chunk_memory_layout", '"C" or "F"', order)
    _check_extensions(data.get("extensions", []), key)
    if data.get("storage_transformers"):
        raise UnsupportedError(f'{key}: field "storage_transformers": not supported')
    attributes = data.get("attributes", {})
    if not isinstance(attributes, Mapping):
        fail(key, "attributes", "an object", attributes)
    attributes = dict(attributes)
    filters = _filters(attributes)
    return ArrayMetadata(
        shape=shape,
        dtype=dtype,
        chunk_shape=chunks,
        fill_value=_fill(require(data, "fill_value", key), dtype, key),
        zarr_format=2,
        chunk_key_encoding=DraftChunkKeyEncoding("default", separator),
        attributes=attributes,
        order=order,
        filters=filters,
        compressor=compressor_config(data.get("compressor"), key),
    )


@dataclass(frozen=True)
class DraftGroupMetadata(GroupMetadata):
    """A group read from a draft hierarchy (its members come in `consolidated`)."""


def parse_group(doc: Document | None, key: str) -> DraftGroupMetadata:
    """The group metadata in a draft `<path>.group.json` document (None: implicit group)."""
    data = {} if doc is None else load(doc, key)
    attributes = data.get("attributes", {})
    if not isinstance(attributes, Mapping):
        fail(key, "attributes", "an object", attributes)
    return DraftGroupMetadata(zarr_format=2, attributes=dict(attributes))


def is_draft(meta: ArrayMetadata | GroupMetadata) -> bool:
    """Whether `meta` was read from a 2020 draft hierarchy (written as such: never)."""
    if isinstance(meta, GroupMetadata):
        return isinstance(meta, DraftGroupMetadata)
    return isinstance(meta.chunk_key_encoding, DraftChunkKeyEncoding)


ENTRY_POINT_KEY = "zarr.json"


class DraftFormat(Format):
    """The 2020 v3 draft (read only): an entry point `zarr.json` at the hierarchy's root,
    node documents under `meta/root`, chunks under `data/root`. A group comes back with
    every node below it (`consolidated`): one listing finds them."""

    name: ClassVar[str] = "2020 Zarr v3 draft"
    asked_by: ClassVar[frozenset[int | None]] = frozenset({None, 3})
    stage: ClassVar[int] = FIRST

    def read(self, path: str, options: ReadOptions) -> Reading:
        """A root answers with v3's `zarr.json` (also when `zarr_format=3` is asked for);
        a node below one, when nothing else answers, with the v1 keys' batch."""
        (stored,) = yield Fetch((join(path, ENTRY_POINT_KEY),))
        if stored is not None and is_entry_point(stored.json()):
            entry = parse_entry_point(stored.json(), stored.key)
            return (yield from _read_tree(path, "", entry))
        if options.zarr_format is not None or not path:
            return None
        array, group, root = yield Fetch((*node_keys(path), ENTRY_POINT_KEY), LAST)
        if root is None or not is_entry_point(root.json()):
            return None  # a v3 root: the node is missing (or an implicit v3 group)
        entry = parse_entry_point(root.json(), ENTRY_POINT_KEY)
        if entry.metadata_key_suffix != ".json":
            return (yield from _read_tree("", path, entry))
        return (yield from _node("", path, array, group))

    def owns(self, meta: Node) -> bool:
        return is_draft(meta)

    def node_keys(self, path: str) -> tuple[str, ...]:
        return node_keys(path)

    def metadata_key(self, path: str, meta: ArrayMetadata) -> str:
        return node_keys(path)[0]

    def chunk_prefix(self, path: str, meta: ArrayMetadata) -> str:
        return data_prefix(path)

    def documents(self, path: str, meta: Node) -> dict[str, bytes]:
        raise MetadataError(
            f"cannot write metadata into a 2020 v3 draft hierarchy ({path or '/'!r}); "
            "aiozarr.migrate it to Zarr v3 first"
        )

    def to_dict(self, meta: Node) -> dict[str, Any]:
        """As v2's: the draft's model is v2's (a compressor over an ordered array)."""
        return v2.node_dict(meta)


def _read_tree(root: str, path: str, entry: EntryPoint) -> Reading:
    """The node at `path` of the draft hierarchy whose entry point is at `root`."""
    suffix = entry.metadata_key_suffix
    array, group = yield Fetch(tuple(join(root, k) for k in node_keys(path, suffix)))
    node = yield from _node(root, path, array, group, suffix)
    if node is None:
        raise Absent(f"no array or group at {path or '/'!r} in draft")
    return node


def _node(
    root: str, path: str, array: Stored | None, group: Stored | None, suffix: str = ".json"
) -> Reading:
    array_key, group_key = (join(root, k) for k in node_keys(path, suffix))
    if array is not None:
        return parse_array(array.json(), array_key)
    members = yield from _members(root, path, suffix)
    if group is None and not members and path:
        return None  # neither an explicit nor an implicit group
    meta = parse_group(None if group is None else group.json(), group_key)
    return dataclasses.replace(meta, consolidated=members)


def _members(root: str, path: str, suffix: str) -> Generator[Step, Any, dict[str, Node]]:
    """Every node below a draft group by relative path (one listing, one batch of reads)."""
    base = join(root, f"{META_ROOT}/{path}" if path else META_ROOT) + "/"
    kinds = {f".array{suffix}": "array", f".group{suffix}": "group"}
    listed = yield ListKeys(base)
    keys = tuple(k for k in listed if any(k.endswith(e) for e in kinds))
    docs = yield Fetch(keys)
    members: dict[str, Node] = {}
    for key, doc in zip(keys, docs, strict=True):
        if doc is None:
            continue
        ending = next(e for e in kinds if key.endswith(e))
        rel = key[len(base) : -len(ending)]
        parse = parse_array if kinds[ending] == "array" else parse_group
        members[rel] = parse(doc.json(), key)
        parts = rel.split("/")
        for i in range(1, len(parts)):  # implicit groups above it
            members.setdefault("/".join(parts[:i]), parse_group(None, key))
    return members


FORMAT = DraftFormat()
