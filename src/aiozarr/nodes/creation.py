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

import dataclasses
import enum
import inspect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from aiozarr.codecs.base import Codec
from aiozarr.codecs.numcodecs_v2 import check_new_filters
from aiozarr.codecs.numcodecs_v3 import complete
from aiozarr.codecs.registry import NUMCODECS_PREFIX, new_codec
from aiozarr.codecs.sharding import check_index_size
from aiozarr.errors import MetadataError, UnsupportedError, ValueOutOfRangeError
from aiozarr.metadata import conversions, dtypes, fill_value, v3
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata
from aiozarr.nodes import casting
from aiozarr.nodes.shape_changes import checked_shape
from aiozarr.selection.chunk_grid import AxisEdges, RectilinearGrid
from aiozarr.sizes import ceil_div

CodecLike = Codec | CodecMetadata | Mapping[str, Any]

# `chunks="auto"` (and no `chunks`): zarr-python's rule, so both libraries chunk alike.
_AUTO_INCREMENT_BYTES = 256 * 1024
_AUTO_MIN_BYTES = 128 * 1024
_AUTO_MAX_BYTES = 64 * 1024 * 1024

#: zarr-python's default compressor for v3 arrays, so both libraries write alike.
DEFAULT_V3_COMPRESSOR = CodecMetadata("zstd", {"level": 0, "checksum": False})
# Without "checksum": TensorStore refuses the key, and numcodecs defaults it to false.
DEFAULT_V2_COMPRESSOR: Mapping[str, Any] = {"id": "zstd", "level": 0}


def auto_chunks(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The chunk shape zarr-python picks for `chunks="auto"` (its `_guess_chunks`), so
    the same call makes the same array: a target that grows with the array's size (from
    128 KiB up to 64 MiB), reached by halving the axes in turn, first axis first."""
    chunks = [max(int(s), 1) for s in shape]
    if not chunks:
        return ()
    itemsize = max(itemsize, 1)
    total = math.prod(chunks) * itemsize
    target = _AUTO_INCREMENT_BYTES * 2 ** math.log10(total / (1024.0 * 1024))
    target = min(max(target, _AUTO_MIN_BYTES), _AUTO_MAX_BYTES)
    axis = 0
    while True:
        chunk_bytes = math.prod(chunks) * itemsize
        close = abs(chunk_bytes - target) / target < 0.5
        if (chunk_bytes < target or close) and chunk_bytes < _AUTO_MAX_BYTES:
            break
        if math.prod(chunks) == 1:
            break
        chunks[axis % len(chunks)] = ceil_div(chunks[axis % len(chunks)], 2)
        axis += 1
    return tuple(chunks)


def _codec_metadata(
    codec: CodecLike, what: str, dtype: np.dtype[Any] | None = None
) -> CodecMetadata:
    if isinstance(codec, CodecMetadata):
        return codec
    if isinstance(codec, Codec):
        return codec.to_metadata()
    if isinstance(codec, Mapping) and isinstance(codec.get("name"), str):
        if codec["name"].startswith(NUMCODECS_PREFIX):  # completed by `complete`
            return CodecMetadata(codec["name"], dict(codec.get("configuration") or {}))
        return new_codec(codec, what, dtype).to_metadata()
    if not isinstance(codec, Mapping):
        converted = _zarr_codec(codec, dtype) or _numcodecs_as_v3(codec, what, dtype)
        if converted is not None:
            return converted
    raise MetadataError(
        f"{what}: expected a codec (aiozarr's, zarr-python's or numcodecs'), CodecMetadata "
        f"or {{'name': ..., 'configuration': ...}}, got {codec!r}"
    )


def _jsonable(value: Any) -> Any:
    """`value` with tuples as lists and enums as their values: what a JSON document holds."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _zarr_codec(codec: Any, dtype: np.dtype[Any] | None) -> CodecMetadata | None:
    """A zarr-python 3 codec object (`zarr.codecs.BloscCodec(...)`, ...) as metadata, by
    duck typing on its `to_dict()` (zarr is never imported here). Blosc's `typesize` and
    `shuffle`, when left to zarr-python to choose, are chosen as it does: from the item size."""
    to_dict = getattr(codec, "to_dict", None)
    if not callable(to_dict) or isinstance(codec, type):
        return None
    try:
        doc = to_dict()
    except Exception:
        return None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("name"), str):
        return None
    configuration = _jsonable(dict(doc.get("configuration") or {}))
    if doc["name"] == "blosc" and dtype is not None:
        tunable = set(getattr(codec, "_tunable_attrs", ()) or ())
        if "typesize" in tunable or configuration.get("typesize") is None:
            configuration["typesize"] = dtype.itemsize
        if "shuffle" in tunable or configuration.get("shuffle") is None:
            configuration["shuffle"] = conversions.auto_shuffle(dtype.itemsize)
    return CodecMetadata(doc["name"], configuration)


def _numcodecs_as_v3(codec: Any, what: str, dtype: np.dtype[Any] | None) -> CodecMetadata | None:
    """A numcodecs codec (`numcodecs.Zstd(level=3)`) given for a v3 array, as the v3 core
    codec that writes the same bytes; numcodecs codecs without one are refused by name
    (zarr-python refuses every numcodecs object on v3 arrays)."""
    get_config = getattr(codec, "get_config", None)
    if not callable(get_config) or isinstance(codec, type):
        return None
    config = dict(get_config())
    twin = conversions.numcodecs_as_v3(config, 1 if dtype is None else dtype.itemsize)
    if twin is not None:
        return twin
    raise MetadataError(
        f"{what}: numcodecs codec {config.get('id')!r} has no Zarr v3 codec that writes the "
        f"same bytes (v3 has zstd, gzip, blosc, crc32c); use zarr_format=2, or a v3 codec"
    )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return [value]


def _v3_serializer(dtype: np.dtype[Any], holds_bytes: bool) -> CodecMetadata:
    if dtype.kind in "OT":
        return CodecMetadata("vlen-bytes" if holds_bytes else "vlen-utf8")
    # Fixed-length unicode is 4-byte code points: it has a byte order too (zarr-python
    # 3.4 refuses a `bytes` codec without one there), and so has a record of such fields.
    if dtypes.has_byte_order(dtype):
        return CodecMetadata("bytes", {"endian": "little"})
    return CodecMetadata("bytes")


def _fill_value(value: Any, dtype: np.dtype[Any], zarr_format: int) -> Any:
    if value is None:
        if zarr_format == 2 or dtype.kind == "O":
            return None  # objects: `_stored_fill` gives v3's, by what they hold
        if dtype.kind == "T":
            return ""
        if dtype.kind in "mM":  # NaT, as zarr-python's default and aiozarr's v2 reads
            return np.array("NaT", dtype=dtype)[()]
        return np.zeros((), dtype=dtype)[()]
    if dtype.kind in "biufcmMSU" or dtype.names is not None:  # numpy's casts: 300 is 44
        try:
            return casting.as_fill_value(value, dtype)
        except ValueOutOfRangeError as error:
            raise ValueOutOfRangeError(f"fill_value {error}") from None
        except (TypeError, ValueError):
            pass  # another kind of value ("NaT"...): numpy's conversion
    try:
        return np.array(value, dtype=dtype)[()]
    except (TypeError, ValueError, OverflowError) as error:
        raise MetadataError(f"fill_value {value!r} is not a valid {dtype}: {error}") from None


def _stored_fill(meta: ArrayMetadata) -> ArrayMetadata:
    """`meta` with the fill value its document gives back (v2: every NaN canonical), that
    of variable-length strings or bytes converted as writes are (`dtype=str` with 0
    stores "0"; v3's empty by default)."""
    items, shape = dtypes.object_items(meta), np.shape(meta.fill_value)
    if shape and (items is not None or meta.dtype.kind != "O"):
        raise MetadataError(f"fill_value must be one {meta.dtype} value, got shape {shape}")
    value = fill_value.as_stored(meta)
    try:
        if items is not None and (value is not None or meta.zarr_format == 3):
            value = items() if value is None else casting.as_items(value, items)[()]
    except (TypeError, ValueError) as error:
        raise MetadataError(f"fill_value: {error}") from None
    return dataclasses.replace(meta, fill_value=value)


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


@dataclass(frozen=True, slots=True)
class _Arguments:
    """What every format makes of `create_array`'s shared arguments, checked."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    #: The chunk shape (the inner chunks when sharded); the largest chunk when rectilinear.
    chunks: tuple[int, ...]
    chunk_grid: RectilinearGrid | None
    shard_grid: RectilinearGrid | None
    fill_value: Any
    attributes: dict[str, Any]
    dimension_names: tuple[str | None, ...] | None
    #: objects stored with `vlen-bytes` by default (dtype "variable_length_bytes")
    holds_bytes: bool = False


def array_metadata(
    *,
    shape: int | Sequence[int],
    dtype: Any,
    chunks: int | Sequence[int | Sequence[int]] | RectilinearGrid | Literal["auto"] | None = None,
    shards: int | Sequence[int | Sequence[int]] | RectilinearGrid | None = None,
    filters: Any = None,
    compressors: Any = "auto",
    serializer: CodecLike | Literal["auto"] = "auto",
    fill_value: Any = None,
    order: Literal["C", "F"] = "C",
    zarr_format: Literal[2, 3] = 3,
    attributes: Mapping[str, Any] | None = None,
    dimension_names: Sequence[str | None] | None = None,
    chunk_key_encoding: ChunkKeyEncoding | Mapping[str, Any] | str | None = None,
) -> ArrayMetadata:
    """Metadata for a new array from `create_array`'s arguments.

    Codecs may be given as aiozarr codecs, `CodecMetadata`, metadata dicts, zarr-python
    codec objects (`zarr.codecs.BloscCodec()`) or numcodecs codecs (`numcodecs.Zstd()`):
    each becomes the metadata dict it stands for here, at the API's edge.
    """
    if isinstance(chunks, str) and chunks == "auto":
        chunks = None  # zarr-python's spelling of "choose for me"
    key_encoding = _key_encoding(chunk_key_encoding, zarr_format)
    args = _check_arguments(
        shape=shape,
        dtype=dtype,
        chunks=chunks,
        shards=shards,
        fill_value=fill_value,
        zarr_format=zarr_format,
        attributes=attributes,
        dimension_names=dimension_names,
    )
    if zarr_format == 2:
        meta = _v2_metadata(
            args,
            shards=shards,
            filters=filters,
            compressors=compressors,
            order=order,
            chunk_key_encoding=key_encoding,
        )
    else:
        meta = _v3_metadata(
            args,
            shards=shards,
            filters=filters,
            compressors=compressors,
            serializer=serializer,
            order=order,
            chunk_key_encoding=key_encoding,
        )
    return _stored_fill(meta)


def _key_encoding(value: Any, zarr_format: int) -> ChunkKeyEncoding | None:
    """`chunk_key_encoding=` as zarr-python takes it too: aiozarr's, zarr-python's object,
    its metadata (`{"name": "v2", "configuration": {"separator": "/"}}`, or flat:
    `{"name": "v2", "separator": "/"}`), or a name. A v2 array's keys are v2's."""
    if value is None or isinstance(value, ChunkKeyEncoding):
        found = value
    else:
        if hasattr(value, "to_dict"):  # zarr-python's
            value = value.to_dict()
        if isinstance(value, Mapping) and "separator" in value:
            rest = {k: v for k, v in value.items() if k != "separator"}
            value = {**rest, "configuration": {"separator": value["separator"]}}
        found = v3.chunk_key_encoding_of(value, "chunk_key_encoding")
    if found is not None and zarr_format == 2 and found.name != "v2":
        raise MetadataError(
            f"chunk_key_encoding: a v2 array's chunk keys are v2's ('0.0' or '0/0'), "
            f"got {found.name!r}"
        )
    return found


def _check_arguments(
    *,
    shape: Any,
    dtype: Any,
    chunks: Any,
    shards: Any,
    fill_value: Any,
    zarr_format: int,
    attributes: Mapping[str, Any] | None,
    dimension_names: Sequence[str | None] | None,
) -> _Arguments:
    """The arguments every format shares, checked: shape, dtype, the chunk (and shard)
    grid, dimension names, fill value."""
    array_shape = checked_shape(shape, "shape")
    np_dtype, holds_bytes = dtypes.requested_dtype(dtype, zarr_format)
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
        inner = checked_shape(chunks, "chunks", len(array_shape))
    else:
        inner = auto_chunks(array_shape, np_dtype.itemsize)
    if any(c == 0 < s for c, s in zip(inner, array_shape, strict=True)):
        raise MetadataError(
            f"chunks {tuple(inner)}: an edge of 0 holds no element of shape {array_shape} "
            "(0 is taken only along an axis of length 0, and stored as 1)"
        )
    inner = tuple(max(c, 1) for c in inner)
    names = None if dimension_names is None else list(dimension_names)  # as they are read
    names = v3.dimension_names_of(names, len(array_shape), "create_array")
    if names is not None and zarr_format == 2:  # dropped, they were lost; zarr-python refuses
        raise MetadataError(f"dimension_names {list(names)}: a Zarr v2 array stores none")
    return _Arguments(
        shape=array_shape,
        dtype=np_dtype,
        chunks=inner,
        chunk_grid=chunk_grid,
        shard_grid=shard_grid,
        fill_value=_fill_value(fill_value, np_dtype, zarr_format),
        attributes=dict(attributes or {}),
        dimension_names=names,
        holds_bytes=holds_bytes,
    )


def _v2_metadata(
    args: _Arguments,
    *,
    shards: Any,
    filters: Any,
    compressors: Any,
    order: Literal["C", "F"],
    chunk_key_encoding: ChunkKeyEncoding | None,
) -> ArrayMetadata:
    """Zarr v2 metadata: numcodecs filters and at most one compressor, no sharding."""
    if shards is not None:
        raise MetadataError("shards need zarr_format=3 (Zarr v2 has no sharding)")
    compressor_list = [DEFAULT_V2_COMPRESSOR] if compressors == "auto" else _as_list(compressors)
    if len(compressor_list) > 1:
        raise MetadataError("Zarr v2 arrays take at most one compressor")
    v2_filters = [_numcodecs_config(f) for f in _as_list(filters)]
    if args.dtype.kind in "OT" and not v2_filters:
        v2_filters = [{"id": "vlen-bytes" if args.holds_bytes else "vlen-utf8"}]
    check_new_filters(v2_filters, args.dtype)
    return ArrayMetadata(
        shape=args.shape,
        dtype=args.dtype,
        chunk_shape=args.chunks,
        fill_value=args.fill_value,
        zarr_format=2,
        chunk_key_encoding=chunk_key_encoding or ChunkKeyEncoding("v2", "."),
        attributes=args.attributes,
        dimension_names=args.dimension_names,
        order=order,
        filters=tuple(v2_filters) or None,
        compressor=_numcodecs_config(compressor_list[0]) if compressor_list else None,
    )


def _v3_metadata(
    args: _Arguments,
    *,
    shards: Any,
    filters: Any,
    compressors: Any,
    serializer: Any,
    order: Literal["C", "F"],
    chunk_key_encoding: ChunkKeyEncoding | None,
) -> ArrayMetadata:
    """Zarr v3 metadata: the codec chain, inside a sharding codec when `shards` is given."""
    codecs = _v3_codecs(
        args, filters=filters, compressors=compressors, serializer=serializer, order=order
    )
    chunk_shape, chunk_grid = args.chunks, args.chunk_grid
    data_type = None
    if any(c.name == "vlen-bytes" for c in codecs):  # zarr-python's type for bytes objects
        if args.dtype.kind != "O":
            raise MetadataError(f"serializer: 'vlen-bytes' stores bytes objects, not {args.dtype}")
        data_type = "variable_length_bytes"
    if shards is not None:
        chunk_shape, chunk_grid = _shard_shape(args, shards)
        codecs = (_sharding_codec(args.chunks, codecs),)
    return ArrayMetadata(
        shape=args.shape,
        dtype=args.dtype,
        chunk_shape=chunk_shape,
        fill_value=args.fill_value,
        zarr_format=3,
        codecs=codecs,
        chunk_key_encoding=chunk_key_encoding or ChunkKeyEncoding("default", "/"),
        attributes=args.attributes,
        dimension_names=args.dimension_names,
        chunk_grid=chunk_grid,
        data_type=data_type,
    )


def _v3_codecs(
    args: _Arguments, *, filters: Any, compressors: Any, serializer: Any, order: str
) -> tuple[CodecMetadata, ...]:
    """filters (and a transpose for order="F"), the serializer, the compressors; the
    fields of `numcodecs.*` codecs zarr-python fills in are filled in (`complete`)."""
    if order not in ("C", "F"):
        raise MetadataError(f"order must be 'C' or 'F', got {order!r}")
    array_to_array = [_codec_metadata(f, "filters", args.dtype) for f in _as_list(filters)]
    if order == "F" and len(args.shape) > 1:
        array_to_array.append(
            CodecMetadata("transpose", {"order": list(range(len(args.shape)))[::-1]})
        )
    to_bytes = (
        _v3_serializer(args.dtype, args.holds_bytes)
        if serializer == "auto"
        else _codec_metadata(serializer, "serializer", args.dtype)
    )
    bytes_to_bytes = (
        [DEFAULT_V3_COMPRESSOR]
        if compressors == "auto"
        else [_codec_metadata(c, "compressors", args.dtype) for c in _as_list(compressors)]
    )
    return complete((*array_to_array, to_bytes, *bytes_to_bytes), args.dtype)


def _shard_shape(args: _Arguments, shards: Any) -> tuple[tuple[int, ...], RectilinearGrid | None]:
    """The shard shape (the largest shard when rectilinear) and the rectilinear grid, if
    any; every shard edge must be a multiple of the inner chunks."""
    inner = args.chunks
    if args.shard_grid is not None:
        for axis, c in enumerate(inner):
            bad = [e for e in args.shard_grid.distinct_edges(axis) if e % c]
            if bad:
                raise MetadataError(
                    f"shards: every shard edge must be a multiple of chunks {inner}, but "
                    f"axis {axis} has an edge of {bad[0]}"
                )
        check_index_size(args.shard_grid.max_shape, inner)
        return args.shard_grid.max_shape, args.shard_grid
    grid = checked_shape(shards, "shards", len(args.shape))
    for s, c in zip(grid, inner, strict=True):
        if c == 0 or s % c:
            raise MetadataError(f"shards {grid} must be a multiple of chunks {inner}")
    check_index_size(grid, inner)
    return grid, args.chunk_grid


def _sharding_codec(inner: tuple[int, ...], codecs: Sequence[CodecMetadata]) -> CodecMetadata:
    """The sharding codec around `codecs`: inner chunks of `inner`, the index at the end."""
    return CodecMetadata(
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
    )


#: The keywords `array_metadata` takes, and `data=` / `config=` (zarr-python's: the values
#: to write, the array's runtime settings): what `create_array` accepts beyond its named ones.
_METADATA_OPTIONS = frozenset(inspect.signature(array_metadata).parameters) | {"data", "config"}

#: zarr-python's `ArrayConfig` keys `create_array(config=...)` takes.
_CONFIG_KEYS = ("write_empty_chunks", "order")


def array_config(config: Any) -> dict[str, Any]:
    """`create_array`'s `config=` (a dict, or zarr-python's `ArrayConfig`) as the settings
    the array applies to its own calls: `write_empty_chunks`. `order` is the order of the
    arrays reads return, which is always "C" here."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        config = {k: getattr(config, k) for k in _CONFIG_KEYS if hasattr(config, k)}
    unknown = sorted(set(config) - set(_CONFIG_KEYS))
    if unknown:
        raise MetadataError(
            f"config: unknown key(s) {unknown}; an array's config takes {', '.join(_CONFIG_KEYS)}"
        )
    order = config.get("order", "C")
    if order != "C":
        raise UnsupportedError(
            f"config: order {order!r}: reads return C-ordered arrays (store in F order with "
            "create_array(order='F'), which is how the chunks are laid out)"
        )
    out: dict[str, Any] = {}
    if config.get("write_empty_chunks") is not None:
        out["write_empty_chunks"] = bool(config["write_empty_chunks"])
    return out


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
    wrapped = getattr(codec, "codec_config", None)  # zarr-python's numcodecs.* wrappers
    if isinstance(wrapped, Mapping) and isinstance(wrapped.get("id"), str):
        return dict(wrapped)
    get_config = getattr(codec, "get_config", None)
    if get_config is None:
        raise MetadataError(f"expected a numcodecs codec or config dict, got {codec!r}")
    config = dict(get_config())
    if config.get("id") == "zstd" and config.get("checksum") is False:
        # as zarr-python writes it (and TensorStore refuses the key): false is the default
        del config["checksum"]
    return config
