"""A variable's `encoding` as xarray's zarr engine gives it: chunks, shards, and the
codecs (`filters`, `compressors`, and for v3 `serializer`), so that a dataset opened with
`engine="aiozarr"` and written again with `Dataset.to_zarr` (or `aiozarr.xarray.to_zarr`)
keeps its codecs.

The codecs are zarr-python's objects when zarr-python can build them (what xarray's engine
hands out, and what its `to_zarr` compares an append against): v3 codecs through zarr's
codec registry, v2 ones through numcodecs. Where zarr-python is not installed, or does not
know a codec, the codec is its metadata document (`{"name": ..., "configuration": ...}`,
or numcodecs' `{"id": ...}` for v2), which both writers accept too.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from typing import Any

from aiozarr.codecs.base import ArrayToArrayCodec, ArrayToBytesCodec, BytesToBytesCodec
from aiozarr.codecs.registry import get_codec_class
from aiozarr.errors import AiozarrError
from aiozarr.metadata.model import ArrayMetadata, CodecMetadata
from aiozarr.nodes.array import AsyncArray

__all__ = ["chunk_encoding", "codec_encoding"]

SHARDING = "sharding_indexed"


def chunk_encoding(array: AsyncArray, dims: tuple[str, ...]) -> dict[str, Any]:
    """`chunks`, `preferred_chunks` and `shards`, as xarray's zarr engine gives them: a
    rectilinear grid's dimensions as their edge lists, but a dimension whose edges are
    regular as its chunk size and a zero-length one as `(0,)` (what dask takes), which
    `create_array` reads back as the same grid. A sharded array prefers its shards, not
    its inner chunks: one dask block per shard, so no two tasks write one shard."""
    rectilinear = array.rectilinear_grid
    if rectilinear is None:
        chunks, shards = array.chunks, array.shards
        preferred: Any = shards or chunks
    else:
        sharded = array.is_sharded
        edges = tuple(_compact(e) for e in rectilinear.edges)
        chunks = array.chunks if sharded else edges
        shards = edges if sharded else None
        preferred = tuple(_compact(e) for e in array.write_chunk_sizes)
    return {
        "chunks": chunks,
        "preferred_chunks": dict(zip(dims, preferred, strict=True)),
        "shards": shards,
    }


def _compact(edges: Any) -> Any:
    """One dimension's chunk edges as xarray reports them: the chunk size where the
    edges are regular (equal, the last one no larger), `(0,)` where there are none."""
    if isinstance(edges, int):
        return edges
    edges = tuple(edges)
    if not edges:
        return (0,)
    if len(set(edges[:-1])) <= 1 and edges[-1] <= edges[0]:
        return edges[0]
    return edges


def codec_encoding(meta: ArrayMetadata) -> dict[str, Any]:
    """`filters` and `compressors` (tuples), and for v3 `serializer`: the chain inside
    the shards for a sharded array, as zarr-python's `Array.filters` etc. give them."""
    if meta.zarr_format == 3:
        return _v3_codecs(meta)
    compressors = () if meta.compressor is None else (_v2_codec(meta.compressor),)
    filters = tuple(_v2_codec(f) for f in meta.filters or ())
    return {"compressors": compressors, "filters": filters}


def _inner_codecs(meta: ArrayMetadata) -> list[dict[str, Any]]:
    docs = [c.to_json() for c in meta.codecs]
    for doc in docs:
        if doc["name"] == SHARDING:
            return list(doc.get("configuration", {}).get("codecs", []))
    return docs


def _v3_codecs(meta: ArrayMetadata) -> dict[str, Any]:
    filters: list[Any] = []
    compressors: list[Any] = []
    serializer: Any = None
    for doc in _inner_codecs(meta):
        kind = _kind(doc["name"])
        codec = _v3_codec(doc)
        if kind is ArrayToArrayCodec:
            filters.append(codec)
        elif kind is ArrayToBytesCodec:
            serializer = codec
        else:
            compressors.append(codec)
    return {"filters": tuple(filters), "compressors": tuple(compressors), "serializer": serializer}


def _kind(name: str) -> type:
    try:
        cls = get_codec_class(name)
    except AiozarrError:  # unknown to aiozarr: the array could not be read anyway
        return BytesToBytesCodec
    for kind in (ArrayToArrayCodec, ArrayToBytesCodec):
        if issubclass(cls, kind):
            return kind
    return BytesToBytesCodec


def _zarr_available() -> bool:
    return "zarr" in sys.modules or importlib.util.find_spec("zarr") is not None


def _v3_codec(doc: Mapping[str, Any]) -> Any:
    """zarr-python's codec object for the document `doc`, or `doc` itself."""
    if not _zarr_available():
        return dict(doc)
    from zarr.registry import get_codec_class as zarr_codec_class

    try:
        return zarr_codec_class(doc["name"]).from_dict(dict(doc))
    except Exception:  # a codec zarr-python does not know, or reads otherwise
        return dict(doc)


def _v2_codec(config: Mapping[str, Any] | CodecMetadata) -> Any:
    """The numcodecs codec configured by `config`, or `config` itself."""
    import numcodecs

    try:
        return numcodecs.get_codec(dict(config))  # type: ignore[arg-type]
    except Exception:  # a codec numcodecs has no class for
        return dict(config)  # type: ignore[arg-type]
