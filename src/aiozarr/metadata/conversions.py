"""Zarr v2 <-> v3: the codecs of one format as the other's that read and write the same
bytes, and an older array's metadata as v3's (pure).

`copy`, `migrate` and `create_array` (numcodecs codecs given for a v3 array) use these;
each caller decides what to do when there is no twin (re-encode, refuse, or pick the
default compressor).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aiozarr.errors import UnsupportedError
from aiozarr.metadata import dtypes, xarray_attrs
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata

#: numcodecs' blosc shuffle numbers and v3's names for them.
BLOSC_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
#: v3's array -> bytes codecs; the codecs after one are its compressors.
SERIALIZERS = frozenset({"bytes", "vlen-utf8", "vlen-bytes", "sharding_indexed"})
# v2 object codecs (the first filter of an object array) and their v3 data types
_VLEN_V3 = {"vlen-utf8": "string", "vlen-bytes": "bytes"}
#: The compressor a v3 target gets when the v2 one has no v3 twin (zarr-python's default).
V3_DEFAULT_COMPRESSOR = CodecMetadata("zstd", {"level": 0, "checksum": False})


def auto_shuffle(itemsize: int) -> str:
    """The blosc shuffle zarr-python (and numcodecs' AUTOSHUFFLE) picks for an item size."""
    return "bitshuffle" if itemsize == 1 else "shuffle"


# -- v2 -> v3 codecs -----------------------------------------------------------------------------


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
    if shuffle not in BLOSC_SHUFFLES:
        return None
    configuration = {
        "cname": compressor.get("cname", "lz4"),
        "clevel": compressor.get("clevel", 5),
        "shuffle": BLOSC_SHUFFLES[shuffle],
        "typesize": itemsize,
        "blocksize": compressor.get("blocksize", 0),
    }
    return CodecMetadata("blosc", configuration)


def numcodecs_as_v3(config: Mapping[str, Any], itemsize: int) -> CodecMetadata | None:
    """A numcodecs codec's configuration (`get_config()`), given for a v3 array, as the v3
    core codec that writes the same bytes (crc32c included; an unknown blosc shuffle is
    the automatic one); None when v3 has none."""
    codec_id = config.get("id")
    if codec_id == "zstd":
        return CodecMetadata(
            "zstd",
            {"level": int(config.get("level", 0)), "checksum": bool(config.get("checksum", False))},
        )
    if codec_id == "gzip":
        return CodecMetadata("gzip", {"level": int(config.get("level", 1))})
    if codec_id == "crc32c":
        return CodecMetadata("crc32c")
    if codec_id == "blosc":
        shuffle = int(config.get("shuffle", 1))
        return CodecMetadata(
            "blosc",
            {
                "typesize": itemsize,
                "cname": config.get("cname", "lz4"),
                "clevel": int(config.get("clevel", 5)),
                "shuffle": BLOSC_SHUFFLES.get(shuffle) or auto_shuffle(itemsize),
                "blocksize": int(config.get("blocksize", 0)),
            },
        )
    return None


def v3_compressors(compressor: Mapping[str, Any] | None, itemsize: int) -> list[Any] | None:
    """A v2 array's compressor as v3 compressor documents; None when v3 has no twin."""
    if compressor is None:
        return []
    twin = v3_compressor(compressor, itemsize)
    return None if twin is None else [twin.to_json()]


# -- v3 -> v2 codecs -----------------------------------------------------------------------------


def v3_parts(codecs: Sequence[Any]) -> tuple[list[Any], Any, list[Any]]:
    """(array->array, serializer, compressors) documents of a v3 codec list, sharding
    unwrapped; the serializer is "auto" when the list has none. The codecs around
    `sharding_indexed` join its inner ones: array->array codecs before it
    (`[cast_value, sharding_indexed]`) encode the same values per inner chunk, and
    bytes->bytes codecs after it (`[sharding_indexed, zstd]`, each shard compressed
    whole) compress each chunk, so that a copy given `chunks`, `shards` or
    `shards=False` neither nests a sharding codec nor drops the compression."""
    docs = [c.to_json() if hasattr(c, "to_json") else dict(c) for c in codecs]
    before: list[Any] = []
    after: list[Any] = []
    for i, doc in enumerate(docs):
        if doc["name"] == "sharding_indexed":
            before, after = docs[:i], docs[i + 1 :]
            docs = list(doc["configuration"]["codecs"])
            break
        if doc["name"] in SERIALIZERS:
            break
    for i, doc in enumerate(docs):
        if doc["name"] in SERIALIZERS:
            return [*before, *docs[:i]], doc, [*docs[i + 1 :], *after]
    return before, "auto", [*docs, *after]


def v2_compressors(compressors: Sequence[Mapping[str, Any]]) -> list[Any] | None:
    """v3 compressor documents as v2 numcodecs configurations; None when v2 has no twin
    (one zstd or gzip has one)."""
    if not compressors:
        return []
    doc = compressors[0]
    conf = doc.get("configuration", {})
    if len(compressors) == 1 and doc["name"] == "zstd":
        return [{"id": "zstd", "level": conf.get("level", 0)}]
    if len(compressors) == 1 and doc["name"] == "gzip":
        return [{"id": "gzip", "level": conf.get("level", 5)}]
    return None


# -- arrays ------------------------------------------------------------------------------------


def create_options(
    meta: ArrayMetadata, zarr_format: int, *, sharded: bool, where: str = "array"
) -> dict[str, Any]:
    """The `create_array` options (codecs, order, attributes, dimension names, fill value)
    that write the values of the array `meta` in `zarr_format`: codecs of the other
    format become their twins ("auto", the default compressor, where there is none),
    variable-length bytes stay bytes, and xarray's dimension names and missing-value
    marker cross formats (`xarray_attrs`). An object array whose object codec has no
    twin in `zarr_format` is refused (`UnsupportedError` naming `where`)."""
    options: dict[str, Any] = {}
    if meta.zarr_format == 3:
        filters, serializer, compressors = v3_parts(meta.codecs)
        if zarr_format == 3:
            options.update(filters=filters or None, serializer=serializer, compressors=compressors)
        else:
            twins = v2_compressors(compressors)
            options["compressors"] = "auto" if twins is None else twins
            if dtypes.object_items(meta) is bytes:  # else create_array's default: vlen-utf8
                options["filters"] = [{"id": "vlen-bytes"}]
    elif zarr_format == 2:
        options.update(
            compressors=[meta.compressor] if meta.compressor else [],
            filters=list(meta.filters or ()) or None,
            order=meta.order,
        )
    else:
        if meta.dtype.hasobject:
            options.update(_object_options(meta, where))
        twins = v3_compressors(meta.compressor, meta.dtype.itemsize)
        options["compressors"] = "auto" if twins is None else twins
        if meta.order == "F" and not sharded:
            options["order"] = "F"
    if zarr_format == 2 and meta.zarr_format == 3:
        attributes, fill = xarray_attrs.to_v2(
            meta.attributes, meta.dimension_names, meta.fill_value, meta.dtype
        )
        options.update(attributes=attributes, dimension_names=None, fill_value=fill)
    elif zarr_format == 3 and meta.zarr_format != 3:
        attributes, names = xarray_attrs.to_v3(
            meta.attributes, meta.fill_value, meta.dtype, meta.ndim
        )
        options.update(attributes=attributes, dimension_names=meta.dimension_names or names)
    if zarr_format == 3 and meta.fill_value is None:
        options["fill_value"] = None  # v2 "no fill value": v3 needs one; creation picks 0
    return options


def v2_array(src: ArrayMetadata) -> ArrayMetadata:
    """A v1, draft or v2 array's metadata as v2's (its chunks' bytes carry over)."""
    return dataclasses.replace(
        src, zarr_format=2, codecs=(), chunk_key_encoding=ChunkKeyEncoding("v2", ".")
    )


def v3_array(src: ArrayMetadata, where: str) -> tuple[ArrayMetadata, bool]:
    """A v1, draft or v2 array's metadata as v3's, and whether its stored chunk bytes
    carry over (else they are decoded and encoded again): F order becomes a `transpose`,
    byte order the `bytes` codec's endian, a compressor without a v3 twin zstd."""
    serializer, data_type, copyable = _serializer(src, where)
    codecs: list[CodecMetadata] = []
    if src.order == "F" and src.ndim > 1:
        codecs.append(CodecMetadata("transpose", {"order": list(range(src.ndim))[::-1]}))
    codecs.append(serializer)
    if src.compressor is not None:
        twin = v3_compressor(src.compressor, src.dtype.itemsize)
        copyable = copyable and twin is not None
        codecs.append(twin if copyable and twin is not None else V3_DEFAULT_COMPRESSOR)
    dtype = _v3_dtype(src)
    attributes, dimension_names = xarray_attrs.to_v3(
        src.attributes, src.fill_value, src.dtype, src.ndim
    )
    meta = ArrayMetadata(
        shape=src.shape,
        dtype=dtype,
        chunk_shape=src.chunk_shape,
        fill_value=_v3_fill(src, dtype, data_type),
        zarr_format=3,
        codecs=tuple(codecs),
        attributes=attributes,
        dimension_names=src.dimension_names or dimension_names,
        data_type=data_type,
    )
    return meta, copyable


def _object_codec(src: ArrayMetadata, where: str) -> str:
    """The v2 object array `src`'s object codec (its first filter), refused where v3 has
    no twin: only vlen-utf8 and vlen-bytes have one."""
    filters = list(src.filters or ())
    first = filters[0].get("id") if filters else None
    if first not in _VLEN_V3:
        raise UnsupportedError(
            f"{where}: object array encoded with {filters or 'no object codec'} "
            "has no Zarr v3 equivalent (v3 knows vlen-utf8 and vlen-bytes); "
            "migrate it with zarr_format=2"
        )
    return str(first)


def _object_options(src: ArrayMetadata, where: str) -> dict[str, Any]:
    """The v3 `create_array` options of the v2 object array `src`: its items' serializer
    (bytes stay bytes) and a fill value of that kind (zarr-python 2 wrote 0)."""
    codec = _object_codec(src, where)
    fill = _v3_fill(src, src.dtype, _VLEN_V3[codec])
    if codec == "vlen-bytes":
        return {"serializer": CodecMetadata(codec).to_json(), "fill_value": fill}
    return {"fill_value": fill}


def _serializer(src: ArrayMetadata, where: str) -> tuple[CodecMetadata, Any, bool]:
    """The v3 array -> bytes codec for `src`, its v3 data type, and whether the bytes carry."""
    dtype = src.dtype
    filters = list(src.filters or ())
    if dtype.hasobject:
        first = _object_codec(src, where)
        return CodecMetadata(first), _VLEN_V3[first], len(filters) == 1
    little = dtype.newbyteorder("<")
    if not dtypes.has_byte_order(dtype):
        return CodecMetadata("bytes"), None, not filters and little == dtype
    if dtype.names is not None:  # fields may mix orders: stored little (a struct's default)
        return CodecMetadata("bytes", {"endian": "little"}), None, not filters and little == dtype
    endian = "big" if dtype.byteorder == ">" else "little"
    return CodecMetadata("bytes", {"endian": endian}), None, not filters


def _v3_dtype(src: ArrayMetadata) -> np.dtype[Any]:
    dtype = src.dtype
    if dtype.hasobject and (src.filters or [{}])[0].get("id") == "vlen-utf8":
        return np.dtype(np.dtypes.StringDType())
    return dtype if dtype.hasobject else dtype.newbyteorder("<")  # v3 types have no order


def _v3_fill(src: ArrayMetadata, dtype: np.dtype[Any], data_type: Any) -> Any:
    fill = src.fill_value
    if data_type == "bytes":  # zarr-python 2 wrote 0 for object arrays: no string fill
        return fill if isinstance(fill, bytes) else b""
    if dtype.kind in "OT":
        return fill if isinstance(fill, str) else ""
    if fill is None:  # v2 "no fill value": v3 needs one; what every reader gave
        if dtype.kind in "mM":
            return np.array("NaT", dtype=dtype)[()]
        return np.zeros((), dtype=dtype)[()]
    return np.asarray(fill, dtype=src.dtype).astype(dtype)[()]
