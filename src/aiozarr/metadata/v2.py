"""Zarr v2 `.zarray` / `.zgroup` / `.zattrs` documents <-> the metadata model.

The dtype keeps its byte order (`>f8` stays big-endian); `compressor`, `filters` and
`order` go to the model's v2 fields and `codecs` stays empty. `dimension_separator`
becomes the `v2` chunk key encoding. Writing gives what zarr-python writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiozarr.errors import MetadataError
from aiozarr.metadata import dtypes, fill_value
from aiozarr.metadata.json import dump, fail, int_list, is_int, load, require, show
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata, GroupMetadata

Document = bytes | bytearray | memoryview | str | Mapping[str, Any]

_ZARRAY_FIELDS = frozenset(
    {
        "zarr_format",
        "shape",
        "chunks",
        "dtype",
        "compressor",
        "fill_value",
        "order",
        "filters",
        "dimension_separator",
    }
)


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
    unknown = sorted(set(data) - _ZARRAY_FIELDS)
    if unknown:
        raise MetadataError(f'{key}: unknown field "{unknown[0]}", got {show(data[unknown[0]])}')
    shape = int_list(require(data, "shape", key), key, "shape", 0)
    chunks = int_list(require(data, "chunks", key), key, "chunks", 1)
    if len(chunks) != len(shape):
        fail(key, "chunks", f"{len(shape)} chunk lengths (one per dimension)", list(chunks))
    dtype = dtypes.parse_v2(require(data, "dtype", key), key)
    fill = fill_value.parse_v2(require(data, "fill_value", key), dtype, key)
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
    # zarr-python 3 writes "consolidated_metadata" into the .zgroup documents of .zmetadata
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


def attrs_to_json(attrs: Mapping[str, Any]) -> bytes:
    """The `.zattrs` document holding `attrs`."""
    return dump(dict(attrs), ".zattrs")


_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def v3_compressor(compressor: Mapping[str, Any], itemsize: int) -> CodecMetadata | None:
    """The v3 codec that reads and writes the same bytes as the v2 `compressor` (a
    numcodecs config) for items of `itemsize` bytes; None when v3 has no such codec.

    Missing parameters take numcodecs' defaults; blosc's AUTOSHUFFLE (-1) becomes the
    shuffle numcodecs picks for the item size.
    """
    name = compressor.get("id")
    if name == "zstd":
        level, checksum = compressor.get("level", 0), bool(compressor.get("checksum", False))
        return CodecMetadata("zstd", {"level": level, "checksum": checksum})
    if name == "gzip":
        return CodecMetadata("gzip", {"level": compressor.get("level", 1)})
    if name != "blosc":
        return None
    shuffle = compressor.get("shuffle", 1)
    if shuffle == -1:
        shuffle = 2 if itemsize == 1 else 1
    if shuffle not in _BLOSC_SHUFFLE:
        return None
    configuration = {
        "cname": compressor.get("cname", "lz4"),
        "clevel": compressor.get("clevel", 5),
        "shuffle": _BLOSC_SHUFFLE[shuffle],
        "typesize": itemsize,
        "blocksize": compressor.get("blocksize", 0),
    }
    return CodecMetadata("blosc", configuration)
