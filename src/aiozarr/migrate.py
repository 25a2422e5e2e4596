"""`migrate`: rewrite a v1, 2020-draft or v2 array as a Zarr v2 or v3 array.

Chunks are copied as stored bytes whenever the target can describe the same encoding:
always for v2 targets (v1, draft and v2 chunks are all "compressor(ordered array)"),
and for v3 targets when there are no filters and the compressor is gzip, blosc, zstd
or none (F order becomes a `transpose` codec, byte order the `bytes` codec's endian).
Anything else is decoded and re-encoded, chunk by chunk.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from typing import Any, Literal

from aiozarr import hierarchy
from aiozarr.api import StoreLike, resolve_store
from aiozarr.array import AsyncArray
from aiozarr.errors import NodeNotFoundError
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata, GroupMetadata
from aiozarr.storage.base import RangeRequest
from aiozarr.sync import Array, _run

# numcodecs compressors whose stored frames the v3 codec of the same name reads as is
_SAME_BYTES_V3 = frozenset({"gzip", "blosc", "zstd"})
_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
_BATCH = 256  # chunks copied per batch of requests


def _v3_compressor(config: Mapping[str, Any], itemsize: int) -> CodecMetadata:
    name = config["id"]
    params = {k: v for k, v in config.items() if k != "id"}
    if name == "blosc":
        shuffle = params.get("shuffle", 1)
        if shuffle == -1:  # numcodecs AUTOSHUFFLE
            shuffle = 2 if itemsize == 1 else 1
        params = {
            "cname": params.get("cname", "lz4"),
            "clevel": params.get("clevel", 5),
            "shuffle": _BLOSC_SHUFFLE.get(shuffle, "shuffle"),
            "typesize": itemsize,
            "blocksize": params.get("blocksize", 0),
        }
    elif name == "zstd":
        params = {"level": params.get("level", 0), "checksum": bool(params.get("checksum"))}
    elif name == "gzip":
        params = {"level": params.get("level", 1)}
    return CodecMetadata(name, params)


def target_metadata(src: ArrayMetadata, zarr_format: Literal[2, 3]) -> tuple[ArrayMetadata, bool]:
    """The metadata of the migrated array, and whether stored chunk bytes carry over."""
    if zarr_format == 2:
        meta = dataclasses.replace(
            src, zarr_format=2, codecs=(), chunk_key_encoding=ChunkKeyEncoding("v2", ".")
        )
        return meta, True
    dtype = src.dtype
    compressor = src.compressor
    copyable = src.zarr_format == 3 or (
        not src.filters
        and not dtype.hasobject
        and (compressor is None or compressor["id"] in _SAME_BYTES_V3)
    )
    if src.zarr_format == 3:
        codecs = src.codecs
    else:
        codecs_list: list[CodecMetadata] = []
        if src.order == "F" and src.ndim > 1:
            codecs_list.append(CodecMetadata("transpose", {"order": list(range(src.ndim))[::-1]}))
        endian = "big" if dtype.byteorder == ">" else "little"
        codecs_list.append(CodecMetadata("bytes", {"endian": endian} if dtype.itemsize > 1 else {}))
        if compressor is not None:
            if copyable:
                codecs_list.append(_v3_compressor(compressor, dtype.itemsize))
            else:
                codecs_list.append(CodecMetadata("zstd", {"level": 0, "checksum": False}))
        codecs = tuple(codecs_list)
    if dtype.byteorder == ">":
        dtype = dtype.newbyteorder("<")  # v3 data types carry no byte order
    meta = ArrayMetadata(
        shape=src.shape,
        dtype=dtype,
        chunk_shape=src.chunk_shape,
        fill_value=None if src.fill_value is None else dtype.type(src.fill_value),
        zarr_format=3,
        codecs=codecs,
        attributes=dict(src.attributes),
        dimension_names=src.dimension_names,
    )
    return meta, copyable


async def migrate_async(
    src: StoreLike,
    dst: StoreLike,
    *,
    src_path: str = "",
    dst_path: str = "",
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> AsyncArray:
    """Rewrite the array at `src_path` of `src` as a Zarr `zarr_format` array in `dst`.

    Sync twin: `migrate`. Returns the new array.
    """
    source_store = resolve_store(src, mode="r", storage_options=storage_options)
    target_store = resolve_store(dst, mode="a", storage_options=storage_options)
    src_meta = await hierarchy.read_node(source_store, hierarchy.normalize_path(src_path))
    if isinstance(src_meta, GroupMetadata):
        raise NodeNotFoundError(
            f"{src_path or '/'!r} in {source_store!r} is a group: migrate arrays"
        )
    source = AsyncArray(source_store, src_path, src_meta)
    meta, copyable = target_metadata(src_meta, zarr_format)
    dst_path = hierarchy.normalize_path(dst_path)
    target = AsyncArray(target_store, dst_path, meta)  # checks the codecs before writing
    await hierarchy.prepare_node(target_store, dst_path, zarr_format, overwrite=overwrite)
    await hierarchy.write_node(target_store, dst_path, meta)
    grid = [range(-(-s // c)) for s, c in zip(meta.shape, meta.chunk_shape, strict=True)]
    coords = itertools.product(*grid)
    src_prefix = hierarchy.chunk_prefix(source.path, src_meta)
    dst_prefix = hierarchy.chunk_prefix(dst_path, meta)
    while batch := list(itertools.islice(coords, _BATCH)):
        if copyable:
            keys = [src_prefix + src_meta.chunk_key(c) for c in batch]
            found = await source_store.get_partial_values([RangeRequest(k) for k in keys])
            await target_store.set_many(
                (dst_prefix + meta.chunk_key(c), bytes(memoryview(data)))  # type: ignore[arg-type]
                for c, data in zip(batch, found, strict=True)
                if data is not None
            )
        else:
            for c in batch:
                sel = tuple(
                    slice(i * n, min((i + 1) * n, s))
                    for i, n, s in zip(c, meta.chunk_shape, meta.shape, strict=True)
                )
                await target.setitem(sel, await source.getitem(sel))
    return target


def migrate(src: StoreLike, dst: StoreLike, **options: Any) -> Array:
    """Rewrite an array as Zarr v2 or v3 (`src_path`, `dst_path`, `zarr_format`, ...)."""
    return Array(_run(migrate_async, src, dst, **options))
