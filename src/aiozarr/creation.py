"""Turn the arguments users pass to `create_array` into array metadata (pure).

The argument names follow zarr-python 3's `create_array`: `chunks` (inner chunks when
sharded), `shards`, `filters`, `serializer`, `compressors`, `fill_value`, `order`.

As in zarr-python 3.4, a rectilinear chunk grid is asked for with edge lengths in place
of a chunk length: `chunks=[[2, 3, 5], 4]` gives axis 0 chunks of 2, 3 and 5 elements and
axis 1 chunks of 4 (an int is a regular step). Sharded, the shards are rectilinear
(`shards=[[8, 4], [6]]`) and `chunks` is the regular inner chunk shape, which must divide
every shard edge. A `RectilinearGrid` is taken as well.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from aiozarr.chunk_grid import AxisEdges, RectilinearGrid
from aiozarr.codecs.base import Codec
from aiozarr.errors import MetadataError
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata

CodecLike = Codec | CodecMetadata | Mapping[str, Any]

# Default chunk size when none is given: ~1 MiB decoded, a good request size on object
# stores (benchmarks: v3 unsharded dataset uses 1 MiB chunks).
AUTO_CHUNK_BYTES = 1 << 20

#: zarr-python's default compressor for v3 arrays, so both libraries write alike.
DEFAULT_V3_COMPRESSOR = CodecMetadata("zstd", {"level": 0, "checksum": False})
# Without "checksum": TensorStore refuses the key, and numcodecs defaults it to false.
DEFAULT_V2_COMPRESSOR: Mapping[str, Any] = {"id": "zstd", "level": 0}


def auto_chunks(
    shape: Sequence[int], itemsize: int, target: int = AUTO_CHUNK_BYTES
) -> tuple[int, ...]:
    """A chunk shape of about `target` bytes: halve the longest axis until it fits."""
    chunks = [max(int(s), 1) for s in shape]
    while math.prod(chunks) * max(itemsize, 1) > target and max(chunks) > 1:
        axis = chunks.index(max(chunks))
        chunks[axis] = math.ceil(chunks[axis] / 2)
    return tuple(chunks)


def _codec_metadata(codec: CodecLike, what: str, itemsize: int = 1) -> CodecMetadata:
    if isinstance(codec, CodecMetadata):
        return codec
    if isinstance(codec, Codec):
        return codec.to_metadata()
    if isinstance(codec, Mapping) and isinstance(codec.get("name"), str):
        return CodecMetadata(codec["name"], dict(codec.get("configuration", {})))
    found = _zarr_python_codec(codec, itemsize)
    if found is not None:
        return found
    raise MetadataError(
        f"{what}: expected a codec, CodecMetadata, a zarr-python codec or "
        f"{{'name': ..., 'configuration': ...}}, got {codec!r}"
    )


def _zarr_python_codec(codec: Any, itemsize: int) -> CodecMetadata | None:
    """A zarr-python codec object (`zarr.codecs.BloscCodec(...)`, what xarray's
    `engine="zarr"` puts in `encoding`) as metadata, from its `to_dict()`.

    Parameters it left to the array (`_tunable_attrs`: blosc's `typesize` and `shuffle`
    when not given) are set from the element size, as zarr-python sets them.
    """
    to_dict = getattr(codec, "to_dict", None)
    document = to_dict() if callable(to_dict) else None
    if not (isinstance(document, Mapping) and isinstance(document.get("name"), str)):
        return None
    config = dict(document.get("configuration") or {})
    tunable = getattr(codec, "_tunable_attrs", ())
    if document["name"] == "blosc":
        if "typesize" in tunable:
            config["typesize"] = itemsize
        if "shuffle" in tunable:
            config["shuffle"] = "bitshuffle" if itemsize == 1 else "shuffle"
    return CodecMetadata(document["name"], config)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return [value]


def _v3_serializer(dtype: np.dtype[Any]) -> CodecMetadata:
    if dtype.kind in "OT":
        return CodecMetadata("vlen-utf8")
    if dtype.itemsize > 1 and dtype.kind not in "SUV":
        return CodecMetadata("bytes", {"endian": "little"})
    return CodecMetadata("bytes")


def _dtype(dtype: Any, zarr_format: int) -> np.dtype[Any]:
    """The numpy dtype to store; `str` means variable-length strings, as in zarr-python."""
    if dtype is str or dtype == "str":
        return np.dtype(object) if zarr_format == 2 else np.dtypes.StringDType()
    np_dtype = np.dtype(dtype)
    if zarr_format == 2 and np_dtype.kind == "T":
        return np.dtype(object)  # v2 stores variable-length strings as object + vlen-utf8
    return np_dtype


def _fill_value(value: Any, dtype: np.dtype[Any], zarr_format: int) -> Any:
    if value is None:
        if zarr_format == 2:
            return None
        if dtype.kind in "OT":
            return ""
        return np.zeros((), dtype=dtype)[()]
    try:
        return np.array(value, dtype=dtype)[()]
    except (TypeError, ValueError) as error:
        raise MetadataError(f"fill_value {value!r} is not a valid {dtype}: {error}") from None


def _shape(value: Any, name: str, ndim: int | None = None) -> tuple[int, ...]:
    shape = (value,) if isinstance(value, int | np.integer) else tuple(value)
    if not all(isinstance(s, int | np.integer) and s >= 0 for s in shape):
        raise MetadataError(f"{name} must be non-negative integers, got {value!r}")
    if ndim is not None and len(shape) != ndim:
        raise MetadataError(f"{name} {shape} has {len(shape)} dimensions, the array has {ndim}")
    return tuple(int(s) for s in shape)


def _is_edges(value: Any) -> bool:
    return isinstance(value, Sequence | np.ndarray) and not isinstance(value, str | bytes)


def _axis_edges(entry: Any, size: int, name: str, axis: int) -> AxisEdges:
    """One axis of a `chunks=`/`shards=` grid: a regular step, or the edge lengths."""
    try:
        if isinstance(entry, int | np.integer) and not isinstance(entry, bool) and entry > 0:
            return AxisEdges.regular(int(entry), size)
        if _is_edges(entry):
            return AxisEdges.of(entry)
    except MetadataError as error:
        raise MetadataError(f"{name}: axis {axis}: {error}") from None
    raise MetadataError(
        f"{name}: axis {axis}: expected a positive chunk length or a list of edge lengths, "
        f"got {entry!r}"
    )


def _rectilinear(value: Any, name: str, shape: tuple[int, ...]) -> RectilinearGrid | None:
    """The rectilinear grid `value` asks for (edge lists among its entries), else None."""
    if isinstance(value, RectilinearGrid):
        grid = value
    elif _is_edges(value) and any(_is_edges(v) for v in value):
        if len(value) != len(shape):
            raise MetadataError(
                f"{name} {value!r} has {len(value)} entries, the array has {len(shape)} dimensions"
            )
        grid = RectilinearGrid(
            tuple(
                _axis_edges(entry, size, name, axis)
                for axis, (entry, size) in enumerate(zip(value, shape, strict=True))
            )
        )
    else:
        return None
    if grid.ndim != len(shape):
        raise MetadataError(f"{name} {grid!r} has {grid.ndim} dimensions, the array {len(shape)}")
    for axis, (edges, size) in enumerate(zip(grid.axes, shape, strict=True)):
        if edges.extent < size:
            raise MetadataError(
                f"{name}: the edges of axis {axis} sum to {edges.extent}, less than the "
                f"array's length {size} along it"
            )
    return grid


def array_metadata(
    *,
    shape: int | Sequence[int],
    dtype: Any,
    chunks: int | Sequence[int | Sequence[int]] | RectilinearGrid | None = None,
    shards: int | Sequence[int | Sequence[int]] | RectilinearGrid | None = None,
    filters: Any = None,
    compressors: Any = "auto",
    serializer: CodecLike | Literal["auto"] = "auto",
    fill_value: Any = None,
    order: Literal["C", "F"] = "C",
    zarr_format: Literal[2, 3] = 3,
    attributes: Mapping[str, Any] | None = None,
    dimension_names: Sequence[str | None] | None = None,
    chunk_key_encoding: ChunkKeyEncoding | None = None,
) -> ArrayMetadata:
    """Metadata for a new array from `create_array`'s arguments."""
    array_shape = _shape(shape, "shape")
    np_dtype = _dtype(dtype, zarr_format)
    if zarr_format == 3 and np_dtype.byteorder == ">":
        np_dtype = np_dtype.newbyteorder("<")  # v3 keeps byte order in the bytes codec
    chunk_grid = _rectilinear(chunks, "chunks", array_shape)
    shard_grid = _rectilinear(shards, "shards", array_shape)
    if chunk_grid is not None and shards is not None:
        raise MetadataError(
            "chunks: edge lists cannot be combined with shards=; a sharded array takes the "
            "rectilinear edges as shards= and the regular inner chunk shape as chunks="
        )
    if (chunk_grid is not None or shard_grid is not None) and zarr_format != 3:
        raise MetadataError("a rectilinear chunk grid needs zarr_format=3 (Zarr v2 has none)")
    if chunk_grid is not None:
        inner = chunk_grid.max_shape
    elif chunks is not None:
        inner = _shape(chunks, "chunks", len(array_shape))
    else:
        inner = auto_chunks(array_shape, np_dtype.itemsize)
    inner = tuple(max(c, 1) for c in inner)
    if dimension_names is not None and len(dimension_names) != len(array_shape):
        raise MetadataError(
            f"dimension_names {list(dimension_names)} has {len(dimension_names)} names, "
            f"the array has {len(array_shape)} dimensions"
        )
    fill = _fill_value(fill_value, np_dtype, zarr_format)
    attrs = dict(attributes or {})
    names = None if dimension_names is None else tuple(dimension_names)

    if zarr_format == 2:
        if shards is not None:
            raise MetadataError("shards need zarr_format=3 (Zarr v2 has no sharding)")
        compressor_list = (
            [DEFAULT_V2_COMPRESSOR] if compressors == "auto" else _as_list(compressors)
        )
        if len(compressor_list) > 1:
            raise MetadataError("Zarr v2 arrays take at most one compressor")
        v2_filters = [_numcodecs_config(f) for f in _as_list(filters)]
        if np_dtype.kind in "OT" and not v2_filters:
            v2_filters = [{"id": "vlen-utf8"}]
        return ArrayMetadata(
            shape=array_shape,
            dtype=np_dtype,
            chunk_shape=inner,
            fill_value=fill,
            zarr_format=2,
            chunk_key_encoding=chunk_key_encoding or ChunkKeyEncoding("v2", "."),
            attributes=attrs,
            dimension_names=names,
            order=order,
            filters=tuple(v2_filters) or None,
            compressor=_numcodecs_config(compressor_list[0]) if compressor_list else None,
        )

    if order not in ("C", "F"):
        raise MetadataError(f"order must be 'C' or 'F', got {order!r}")
    itemsize = 1 if np_dtype.kind in "OT" else max(np_dtype.itemsize, 1)
    array_to_array = [_codec_metadata(f, "filters", itemsize) for f in _as_list(filters)]
    if order == "F" and len(array_shape) > 1:
        array_to_array.append(
            CodecMetadata("transpose", {"order": list(range(len(array_shape)))[::-1]})
        )
    to_bytes = (
        _v3_serializer(np_dtype)
        if serializer == "auto"
        else _codec_metadata(serializer, "serializer", itemsize)
    )
    bytes_to_bytes = (
        [DEFAULT_V3_COMPRESSOR]
        if compressors == "auto"
        else [_codec_metadata(c, "compressors", itemsize) for c in _as_list(compressors)]
    )
    codecs = (*array_to_array, to_bytes, *bytes_to_bytes)
    grid = inner
    if shard_grid is not None:
        grid = shard_grid.max_shape
        for axis, c in enumerate(inner):
            bad = [e for e in shard_grid.distinct_edges(axis) if e % c]
            if bad:
                raise MetadataError(
                    f"shards: every shard edge must be a multiple of chunks {inner}, but "
                    f"axis {axis} has an edge of {bad[0]}"
                )
        chunk_grid = shard_grid
    elif shards is not None:
        grid = _shape(shards, "shards", len(array_shape))
        for s, c in zip(grid, inner, strict=True):
            if c == 0 or s % c:
                raise MetadataError(f"shards {grid} must be a multiple of chunks {inner}")
    if shards is not None:
        codecs = (
            CodecMetadata(
                "sharding_indexed",
                {
                    "chunk_shape": list(inner),
                    "codecs": [c.to_json() for c in codecs],
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                },
            ),
        )
    return ArrayMetadata(
        shape=array_shape,
        dtype=np_dtype,
        chunk_shape=grid,
        fill_value=fill,
        zarr_format=3,
        codecs=codecs,
        chunk_key_encoding=chunk_key_encoding or ChunkKeyEncoding("default", "/"),
        attributes=attrs,
        dimension_names=names,
        chunk_grid=chunk_grid,
    )


#: The keywords `array_metadata` takes: what `create_array` accepts beyond its named ones.
_METADATA_OPTIONS = frozenset(inspect.signature(array_metadata).parameters)


def check_options(function: str, options: Iterable[str]) -> None:
    """Refuse a keyword `array_metadata` does not take, naming `function` (the one the
    caller called: `create_array`'s `**options` end here, in a function the caller never
    named), before any work."""
    for name in options:
        if name not in _METADATA_OPTIONS:
            raise TypeError(f"{function}(): got an unexpected keyword argument {name!r}")


def _numcodecs_config(codec: Any) -> dict[str, Any]:
    """A numcodecs codec (or its config dict) as the config dict v2 metadata stores."""
    if isinstance(codec, Mapping):
        if not isinstance(codec.get("id"), str):
            raise MetadataError(f"a Zarr v2 codec config needs an 'id', got {dict(codec)!r}")
        return dict(codec)
    get_config = getattr(codec, "get_config", None)
    if get_config is None:
        raise MetadataError(f"expected a numcodecs codec or config dict, got {codec!r}")
    return dict(get_config())
