"""Zarr v1 `meta` / `attrs` documents -> the metadata model (read only).

A v1 array keeps its metadata in the key `meta` and its attributes in `attrs`; chunks
are `0.0`-style keys beside them. The `compression` name and `compression_opts` become
the numcodecs configuration of the model's `compressor`, so the v2 codec bridge decodes
v1 chunks.

zarr 1.x, the v1 writer, is the reference where the spec leaves room:
- only its blosc compressor stored a chunk in the array's `order`; zlib, bz2, lzma and
  "none" stored `array.tobytes()`, which is C order whatever `order` says, so the model's
  (chunk layout) order is "F" only for blosc;
- `fill_value` is any scalar numpy fills a chunk with: 0 on a fixed-length bytes array
  fills it with b"0", on a complex one with 0j.

`FORMAT` is the format: probed last, with the 2020 draft, when neither v3 nor v2 answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.metadata import dtypes, fill_value, v2
from aiozarr.metadata.format_protocol import LAST, Fetch, Format, Node, Reading, ReadOptions, join
from aiozarr.metadata.json import fail, int_list, is_int, load, require, show
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding

Document = bytes | bytearray | memoryview | str | Mapping[str, Any]

#: zarr-python 1.x defaults when `compression_opts` is null.
_DEFAULT_OPTS: dict[str, Any] = {
    "zlib": 1,
    "bz2": 1,
    "blosc": {"cname": "blosclz", "clevel": 5, "shuffle": 1},
}


def compressor_config(name: Any, opts: Any, key: str) -> dict[str, Any] | None:
    """The numcodecs configuration of a v1 `compression` and its `compression_opts`."""
    if name is None or name == "none":
        return None
    if not isinstance(name, str):
        fail(key, "compression", 'a compression library name such as "blosc"', name)
    if opts is None:
        opts = _DEFAULT_OPTS.get(name)
    if name in ("zlib", "bz2"):
        if not is_int(opts):
            fail(key, "compression_opts", f"an integer compression level for {name}", opts)
        return {"id": name, "level": opts}
    if name == "blosc":
        if not isinstance(opts, Mapping) or not {"cname", "clevel", "shuffle"} <= set(opts):
            fail(key, "compression_opts", 'an object {"cname", "clevel", "shuffle"}', opts)
        config = {"id": "blosc", "cname": opts["cname"], "clevel": opts["clevel"]}
        config["shuffle"] = opts["shuffle"]
        if "blocksize" in opts:
            config["blocksize"] = opts["blocksize"]
        return config
    if name == "lzma":
        if opts is None:
            return {"id": "lzma"}
        if is_int(opts):
            return {"id": "lzma", "preset": opts}
        allowed = {"format", "check", "preset", "filters"}
        if not isinstance(opts, Mapping) or set(opts) - allowed:
            fail(key, "compression_opts", f"a preset or an object with {sorted(allowed)}", opts)
        return {"id": "lzma", **opts}
    raise UnsupportedError(
        f'{key}: field "compression": unsupported v1 compression {show(name)} '
        '(expected "zlib", "bz2", "lzma", "blosc" or "none")'
    )


def parse_fill_value(value: Any, dtype: np.dtype[Any], key: str) -> Any:
    """The fill value of a v1 array: the scalar zarr 1.x filled chunks with.

    zarr 1.x called `chunk.fill(value)` with the JSON value, so a number or text on
    fixed-length bytes, text or complex arrays is numpy's conversion of it (0 -> b"0").
    Every other case reads as in v2.
    """
    if dtype.kind in "SUc" and isinstance(value, int | float | str) and not isinstance(value, bool):
        if dtype.kind == "c" and isinstance(value, str):
            fail(key, "fill_value", f"a number for {dtype}", value)
        try:
            return np.full((), value, dtype=dtype)[()]
        except (TypeError, ValueError, UnicodeError) as error:
            fail(key, "fill_value", f"a scalar that converts to {dtype} ({error})", value)
    return fill_value.parse_v2(value, dtype, key)


def parse_meta(doc: Document, key: str, attrs: Mapping[str, Any] | None = None) -> ArrayMetadata:
    """The array metadata in the v1 `meta` document `doc` (and its `attrs`, decoded)."""
    data = load(doc, key)
    zarr_format = require(data, "zarr_format", key)
    if not is_int(zarr_format) or zarr_format != 1:
        fail(key, "zarr_format", "1", zarr_format)
    shape = int_list(require(data, "shape", key), key, "shape", 0)
    chunks = int_list(require(data, "chunks", key), key, "chunks", 1)
    if len(chunks) != len(shape):
        fail(key, "chunks", f"{len(shape)} chunk lengths (one per dimension)", list(chunks))
    dtype = dtypes.parse_v2(require(data, "dtype", key), key)
    if dtype.hasobject:
        raise UnsupportedError(f'{key}: field "dtype": v1 has no object arrays, got "|O"')
    order = require(data, "order", key)
    if order not in ("C", "F"):
        fail(key, "order", '"C" or "F"', order)
    compression = require(data, "compression", key)
    compressor = compressor_config(compression, data.get("compression_opts"), key)
    if compression != "blosc":
        order = "C"  # zarr 1.x's other compressors stored array.tobytes(): C order
    if attrs is not None and not isinstance(attrs, Mapping):
        raise MetadataError(f"{key}: attributes must be a JSON object, got {show(attrs)}")
    return ArrayMetadata(
        shape=shape,
        dtype=dtype,
        chunk_shape=chunks,
        fill_value=parse_fill_value(data.get("fill_value"), dtype, key),
        zarr_format=1,
        chunk_key_encoding=ChunkKeyEncoding("v2", "."),
        attributes=dict(attrs or {}),
        order=order,
        compressor=compressor,
    )


META_KEY = "meta"
ATTRS_KEY = "attrs"


class V1Format(Format):
    """Zarr v1 (read only): an array's `meta` and `attrs`; v1 has no groups."""

    name: ClassVar[str] = "Zarr format 1"
    zarr_format: ClassVar[int | None] = 1
    asked_by: ClassVar[frozenset[int | None]] = frozenset({None, 1})
    stage: ClassVar[int] = LAST

    def read(self, path: str, options: ReadOptions) -> Reading:
        meta, attrs = yield Fetch((join(path, META_KEY), join(path, ATTRS_KEY)))
        if meta is None:
            return None
        attributes = None if attrs is None else attrs.json()
        return parse_meta(meta.json(), meta.key, attributes)

    def owns(self, meta: Node) -> bool:
        return meta.zarr_format == 1

    def node_keys(self, path: str) -> tuple[str, ...]:
        return (join(path, META_KEY),)

    def metadata_key(self, path: str, meta: ArrayMetadata) -> str:
        return join(path, META_KEY)

    def to_dict(self, meta: Node) -> dict[str, Any]:
        """As v2's: a v1 array's `.zarray` is the document zarr-python would give."""
        return v2.node_dict(meta)


FORMAT = V1Format()
