"""Writing xarray datasets with aiozarr: `to_zarr`, `region=`, `append_dim=`; dask-backed
variables block by block."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

import anyio
import numpy as np
import xarray as xr
from xarray.backends.zarr import FillValueCoder
from xarray.namedarray.utils import is_duck_dask_array

from aiozarr import config
from aiozarr.api import StoreLike, resolve_store
from aiozarr.errors import NodeNotFoundError, unwrap_group
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.nodes import hierarchy, node_updates, shape_changes
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.creation import array_metadata
from aiozarr.storage.protocol import Store
from aiozarr.sync import run
from aiozarr.xarray import appends, placements
from aiozarr.xarray.consolidation import consolidate_async, consolidate_written
from aiozarr.xarray.encoded_values import cf_encoded, checked_encoding, v3_fill_attribute
from aiozarr.xarray.hierarchy_format import written_format
from aiozarr.xarray.placements import (
    Region,
    check_append_dim,
    check_existing_encoding,
    check_placements,
    check_targets,
    chunks_of,
)
from aiozarr.xarray.tree import read_tree
from aiozarr.xarray.v2_codecs import v2_codecs, v3_codecs
from aiozarr.xarray.variables import DIMENSION_KEY, dimensions

__all__ = ["consolidate_async", "to_zarr", "to_zarr_async", "write_metadata_async"]


# -- writing ----------------------------------------------------------------------------------

_ENCODINGS = frozenset(
    {
        "chunks",
        "shards",
        "compressors",
        "filters",
        "serializer",
        "fill_value",
        "chunk_key_encoding",
        "write_empty_chunks",
    }
)
# CF encodings xarray's coders consume, plus what opening leaves behind
_CF_ENCODINGS = frozenset(
    {
        "dtype",
        "units",
        "calendar",
        "scale_factor",
        "add_offset",
        "_FillValue",
        "missing_value",
        "_Unsigned",
    }
)
_DROPPED = frozenset({"preferred_chunks", "source", "original_shape", "coordinates"})


def _user_encoding(ds: xr.Dataset, encoding: Mapping[str, Mapping[str, Any]] | None) -> None:
    for name, enc in (encoding or {}).items():
        if name not in ds.variables:
            raise ValueError(f"encoding given for {name!r}, which is not a variable of the dataset")
        unknown = set(enc) - _ENCODINGS - _CF_ENCODINGS - _DROPPED
        if unknown:
            raise ValueError(
                f"variable {name!r}: unknown encoding key(s) {sorted(unknown)}; "
                f"aiozarr takes {sorted(_ENCODINGS | _CF_ENCODINGS)}"
            )


def _existing_cf_encoding(meta: ArrayMetadata) -> dict[str, Any]:
    """The CF encoding of a stored variable, so appended values are encoded the same way."""
    enc: dict[str, Any] = {"dtype": meta.dtype}
    for key in sorted(_CF_ENCODINGS - {"dtype", "_FillValue"}):  # those two: below
        if key in meta.attributes:
            enc[key] = meta.attributes[key]
    if meta.zarr_format == 2 and meta.fill_value is not None:
        enc["_FillValue"] = meta.fill_value
    elif "_FillValue" in meta.attributes:
        enc["_FillValue"] = FillValueCoder.decode(meta.attributes["_FillValue"], meta.dtype)
    return enc


def _encode(
    ds: xr.Dataset,
    encoding: Mapping[str, Mapping[str, Any]] | None,
    existing: Mapping[str, ArrayMetadata],
    zarr_format: int,
) -> tuple[dict[str, tuple[xr.Variable, dict[str, Any]]], dict[str, Any]]:
    """CF-encode every variable with xarray's own coders; values become numpy arrays,
    dask-backed ones stay dask arrays (encoded block by block when written).

    Returns `{name: (encoded variable, create_array options)}` and the group's attributes.
    """
    from xarray import conventions
    from xarray.backends.zarr import encode_zarr_attr_value

    _user_encoding(ds, encoding)
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    out: dict[str, tuple[xr.Variable, dict[str, Any]]] = {}
    for key, var in variables.items():
        name = str(key)
        var = placements.in_stored_order(name, var.copy(deep=False), existing)  # as xarray
        if name in (encoding or {}):  # it replaces the variable's own, as in xarray
            var.encoding = dict(encoding[name])  # type: ignore[index]
        if name in existing:  # encoded as stored: none of its own CF keys (as xarray)
            own = {k: v for k, v in var.encoding.items() if k not in _CF_ENCODINGS}
            var.encoding = own | _existing_cf_encoding(existing[name])
        enc = var.encoding
        options: dict[str, Any] = {
            k: enc[k] for k in ("shards", "compressors", "filters", "serializer") if k in enc
        }
        options = (v2_codecs if zarr_format == 2 else v3_codecs)(options)
        options["chunks"] = chunks_of(name, var, enc)
        if enc.get("write_empty_chunks") is not None:  # not a create_array option: see write()
            options["write_empty_chunks"] = bool(enc["write_empty_chunks"])
        options = {k: v for k, v in options.items() if v is not None}
        if "compressors" in enc and enc["compressors"] is None:
            options["compressors"] = ()  # as for zarr-python: None is no compression
        fill_value = enc.pop("fill_value", None)
        if not is_duck_dask_array(var.data):
            var.load()  # read once: both the encoder and its check below use the values
        encoded = cf_encoded(var, name, zarr_format)
        encoded = checked_encoding(name, var, encoded, existing.get(name), zarr_format)
        var_attrs = {k: encode_zarr_attr_value(v) for k, v in encoded.attrs.items()}
        if zarr_format == 2:
            fill_value = var_attrs.pop("_FillValue", None)
            var_attrs[DIMENSION_KEY] = [str(d) for d in encoded.dims]
        else:
            if fill_value is None and encoded.dtype.kind == "f":
                fill_value = np.nan  # xarray's default for floats (zarr's is 0)
            if var_attrs.get("_FillValue") is not None:
                fill = v3_fill_attribute(name, var_attrs["_FillValue"], encoded.dtype)
                var_attrs["_FillValue"] = fill
            options["dimension_names"] = [str(d) for d in encoded.dims]
        options.update(fill_value=fill_value, attributes=var_attrs)
        data = encoded.data if is_duck_dask_array(encoded.data) else np.asarray(encoded.values)
        out[name] = (xr.Variable(encoded.dims, data), options)
    return out, {k: encode_zarr_attr_value(v) for k, v in attrs.items()}


class DaskWrite:
    """One dask-backed variable still to be written: its blocks, the array, the region,
    whether chunks equal to the fill value are stored (None: the settings'), and whether
    the region may start and end inside a chunk (`aiozarr.dask.store`'s `partial_edges`:
    xarray's rule, in mode "a" but not "r+"); `safe`: False when the blocks may share
    chunks (`safe_chunks=False`, whose in-place check ran before anything was written)."""

    __slots__ = ("array", "partial_edges", "region", "safe", "source", "write_empty_chunks")

    def __init__(
        self,
        source: Any,
        array: AsyncArray,
        region: tuple[slice, ...] | None,
        write_empty_chunks: bool | None = None,
        partial_edges: bool = False,
        safe: bool = True,
    ) -> None:
        self.source, self.array, self.region = source, array, region
        self.write_empty_chunks, self.partial_edges = write_empty_chunks, partial_edges
        self.safe = safe


async def to_zarr_async(
    ds: xr.Dataset,
    store: StoreLike,
    *,
    group: str | None = None,
    mode: Literal["w", "w-", "a", "r+"] | None = None,
    zarr_format: Literal[2, 3] | None = None,
    encoding: Mapping[str, Mapping[str, Any]] | None = None,
    region: Region | None = None,
    append_dim: str | None = None,
    consolidated: bool = True,
    write_empty_chunks: bool | None = None,
    safe_chunks: bool = True,
    compute: bool = True,
    storage_options: Mapping[str, Any] | None = None,
) -> Any:
    """Write `ds` as a Zarr group with aiozarr. Sync twin: `to_zarr` (the options are there).

    Dask-backed variables are written block by block on a worker thread (dask's scheduler
    runs the blocks); with `compute=False` they are returned as a `dask.delayed.Delayed`
    that writes them when computed.
    """
    with unwrap_group():
        writes = await write_metadata_async(
            ds,
            store,
            group=group,
            mode=mode,
            zarr_format=zarr_format,
            encoding=encoding,
            region=region,
            append_dim=append_dim,
            consolidated=consolidated,
            write_empty_chunks=write_empty_chunks,
            safe_chunks=safe_chunks,
            storage_options=storage_options,
        )
    delayed = _delayed(writes)
    if delayed is None or not compute:
        return delayed
    await anyio.to_thread.run_sync(delayed.compute)
    return None


async def write_metadata_async(
    ds: xr.Dataset,
    store: StoreLike,
    *,
    group: str | None = None,
    mode: Literal["w", "w-", "a", "r+"] | None = None,
    zarr_format: Literal[2, 3] | None = None,
    encoding: Mapping[str, Mapping[str, Any]] | None = None,
    region: Region | None = None,
    append_dim: str | None = None,
    consolidated: bool = True,
    write_empty_chunks: bool | None = None,
    safe_chunks: bool = True,
    storage_options: Mapping[str, Any] | None = None,
) -> list[DaskWrite]:
    """Everything `to_zarr` writes but dask-backed values (the group, arrays' metadata,
    resized for appends, in-memory values, consolidated metadata); returns those to write."""
    mode = _checked_mode(ds, mode, region, append_dim)  # type: ignore[assignment]
    resolved = resolve_store(store, mode="a", storage_options=storage_options)
    path = hierarchy.normalize_path(group or "")
    meta, existing = await _read_existing(resolved, path, mode, append_dim)
    check_append_dim(existing, append_dim)
    check_existing_encoding(existing, encoding)
    zarr_format = await written_format(resolved, path, meta, zarr_format)  # the hierarchy's
    slices = await placements.resolve_region(ds, region, resolved, path, existing, mode)
    if slices is not None:  # a region write never changes an index
        ds = ds.drop_vars(list(ds.indexes))
    prepared, attrs = await anyio.to_thread.run_sync(_encode, ds, encoding, existing, zarr_format)
    check_targets(prepared, existing, mode, slices)
    check_placements(prepared, existing, slices, append_dim)
    target = _Target(
        resolved, path, zarr_format, existing, slices, append_dim, mode == "a", safe_chunks
    )
    _check_blocks(target, prepared, replaced=mode == "w")
    empties = _write_empty_chunks(prepared, write_empty_chunks)
    fmt = await _write_group(resolved, path, meta, attrs, zarr_format, mode, slices is not None)
    target = dataclasses.replace(target, zarr_format=fmt)
    writes: list[DaskWrite] = []

    async def write(name: str, target: _Target) -> _Target:
        var, options = prepared[name]
        pending, target = await _write_variable(target, name, var, options, empties[name])
        if pending is not None:
            writes.append(pending)
        return target

    first = appends.leader(append_dim, prepared, existing)
    async with target.grown.taken_back_on_error():  # an append's growths, if it fails
        with unwrap_group():
            if first is not None:  # its growth sets the offset of every other's rows
                target = await write(first, target)
            async with anyio.create_task_group() as tg:
                for name in prepared:
                    if name != first:
                        tg.start_soon(write, name, target)
        if consolidated or slices is None:  # snapshots here and above (xarray's: the root's)
            await consolidate_written(
                resolved, path, shared=meta is not None, consolidated=consolidated
            )
    return writes


def _check_blocks(
    target: _Target, prepared: Mapping[str, tuple[xr.Variable, dict[str, Any]]], replaced: bool
) -> None:
    """Refuse dask blocks that would share a chunk (`aiozarr.dask.check_aligned`, an
    append's rows after those stored), or read what they write, before anything is
    written or grown; in mode "w" (`replaced`), any that read the group it deletes."""
    existing, slices, append_dim = target.existing, target.slices, target.append_dim
    for name, (var, options) in prepared.items():
        if not is_duck_dask_array(var.data):
            continue
        from aiozarr.dask import check_aligned, check_not_overwritten

        if replaced:
            check_not_overwritten(var.data, target.store, target.path)

        region = None
        if name not in existing:  # the layout the array will be created with
            creation = {k: v for k, v in options.items() if k != "write_empty_chunks"}
            meta = array_metadata(
                shape=var.shape, dtype=var.dtype, zarr_format=target.zarr_format, **creation
            )
        else:
            meta, dims = existing[name], dimensions(name, existing[name])
            if slices is not None:
                region = tuple(slices.get(d, slice(None)) for d in dims)
            elif append_dim is not None and append_dim in dims:
                axis, offset = dims.index(append_dim), meta.shape[dims.index(append_dim)]
                meta = shape_changes.grown(meta, var.shape, axis, name)
                rows = slice(offset, offset + var.shape[axis])
                region = tuple(rows if d == axis else slice(None) for d in range(len(dims)))
        # the array as it will be (nothing is written), so an error names it
        layout = AsyncArray(target.store, hierarchy.join(target.path, name), meta)
        check_aligned(
            var.data, layout, region, partial_edges=target.partial_edges, safe=target.safe_chunks
        )


def _checked_mode(ds: Any, mode: str | None, region: Any, append_dim: Any) -> str:
    """The write's mode ("r+" for a region, "a" for an append, else "w-" unless given),
    and its arguments checked against it."""
    if not isinstance(ds, xr.Dataset):  # a DataArray: .to_dataset(); a DataTree: by node
        raise TypeError(f"to_zarr writes an xarray Dataset, not a {type(ds).__name__}")
    if mode is None:
        mode = "r+" if region is not None else "a" if append_dim is not None else "w-"
    if mode not in ("w", "w-", "a", "r+"):
        raise ValueError(f"mode must be 'w', 'w-', 'a' or 'r+', got {mode!r}")
    if region is not None and append_dim is not None:
        raise ValueError("pass region= or append_dim=, not both")
    # as xarray: "w" would replace the group with only these rows; "r+" keeps shapes
    if append_dim is not None and mode != "a":
        raise ValueError(f"cannot set append_dim unless mode='a' or mode=None, got {mode!r}")
    if region is not None and mode not in ("a", "r+"):
        raise ValueError(f"cannot set region unless mode='a', 'r+' or None, got {mode!r}")
    return mode


async def _read_existing(
    store: Store, path: str, mode: str, append_dim: str | None
) -> tuple[GroupMetadata | None, dict[str, ArrayMetadata]]:
    """The group at `path` and its arrays' metadata when the mode writes into what is
    there ('a', 'r+'); none (a group to create) otherwise, or when there is no group
    and the mode may create one."""
    if mode in ("a", "r+"):
        try:
            return (await read_tree(store, path, consolidated=False))[""]
        except NodeNotFoundError:
            if mode == "r+" or append_dim is not None:
                raise
    return None, {}


async def _write_group(
    store: Store,
    path: str,
    meta: GroupMetadata | None,
    attrs: dict[str, Any],
    zarr_format: int,
    mode: str,
    region_write: bool,
) -> int:
    """Create the group (`meta` None), or add `attrs` to the attributes of the one there
    and drop its inline snapshot (mode 'a', not a region write). Returns the Zarr format
    its arrays take."""
    if meta is None:
        from aiozarr.nodes.group import AsyncGroup

        await AsyncGroup.create(
            store, path, attributes=attrs, zarr_format=zarr_format, overwrite=mode == "w"
        )
        return zarr_format
    if mode == "a" and not region_write:
        # Merged into the attributes as stored (another writer's kept). The group's
        # snapshot of its members (v3 inline, v2 `.zmetadata`) is dropped, attributes or
        # not: this write changes them, and writes a new one at its end when `consolidated`
        # (else none is left stale). No snapshot and no attributes: read, nothing written.
        merged = node_updates.merged_attributes(attrs)
        await node_updates.update_node(
            store, path, meta, lambda m: node_updates.with_consolidated(None)(merged(m))
        )
    return meta.zarr_format


@dataclasses.dataclass(frozen=True)
class _Target:
    """Where a dataset's variables go: the group, its arrays already there, and the part
    of them written (`slices` of a region write, or `append_dim` with the `offset` the
    first variable's growth committed)."""

    store: Store
    path: str
    zarr_format: int
    existing: Mapping[str, ArrayMetadata]
    slices: Mapping[str, slice] | None
    append_dim: str | None
    partial_edges: bool
    safe_chunks: bool = True  # False: dask blocks may share chunks (xarray's `safe_chunks`)
    offset: int | None = None
    grown: appends.Growths = dataclasses.field(default_factory=appends.Growths)


async def _write_variable(
    target: _Target,
    name: str,
    var: xr.Variable,
    options: Mapping[str, Any],
    write_empty: bool | None,
) -> tuple[DaskWrite | None, _Target]:
    """Create the array of `name` (or place `var` in the one there, grown for an append)
    and write its values; a dask-backed variable is returned still to write, with the
    target (its `offset` set by the first variable an append grows)."""
    key = hierarchy.join(target.path, name)
    if name in target.existing:
        array, where, target = await _place_existing(target, name, var)
    else:
        creation = {k: v for k, v in options.items() if k != "write_empty_chunks"}
        array = await AsyncArray.create(
            target.store,
            key,
            shape=var.shape,
            dtype=var.dtype,
            zarr_format=target.zarr_format,
            overwrite=True,
            **creation,
        )
        where = None
    if is_duck_dask_array(var.data):
        pending = DaskWrite(
            var.data, array, where, write_empty, target.partial_edges, target.safe_chunks
        )
        return pending, target
    with config.set(**({} if write_empty is None else {"write_empty_chunks": write_empty})):
        await array.setitem(... if where is None else where, var.values)
    return None, target


def _written(*_: Any) -> None:
    """The last task of a dask write: every block is stored."""


def _write_empty_chunks(
    prepared: Mapping[str, tuple[xr.Variable, dict[str, Any]]], write_empty_chunks: bool | None
) -> dict[str, bool | None]:
    """Each variable's `write_empty_chunks`: the argument's, else its encoding's. Both,
    differing, are refused, as xarray refuses them."""
    out: dict[str, bool | None] = {}
    for name, (_, options) in prepared.items():
        own = options.get("write_empty_chunks")
        if own is not None and write_empty_chunks is not None and own != write_empty_chunks:
            raise ValueError(
                f"variable {name!r}: encoding has write_empty_chunks={own}, the argument "
                f"write_empty_chunks={write_empty_chunks}"
            )
        out[name] = write_empty_chunks if write_empty_chunks is not None else own
    return out


def _delayed(writes: list[DaskWrite]) -> Any:
    """One `Delayed` that writes every dask-backed variable, block by block."""
    if not writes:
        return None
    import dask

    from aiozarr.dask import store as store_blocks
    from aiozarr.sync import Array

    parts = [
        store_blocks(
            w.source,
            Array(w.array),
            region=w.region,
            compute=False,
            write_empty_chunks=w.write_empty_chunks,
            partial_edges=w.partial_edges,
            safe=w.safe,
        )
        for w in writes
    ]
    return dask.delayed(_written)(*parts)


async def _place_existing(
    target: _Target, name: str, var: xr.Variable
) -> tuple[AsyncArray, tuple[slice, ...] | None, _Target]:
    """The stored array of `name`, where `var` goes in it (None: all of it), and the
    target; an append grows the array first, from its shape as stored (`appends`)."""
    key = hierarchy.join(target.path, name)
    meta = target.existing[name]
    dims = dimensions(name, meta)
    if target.slices is not None:
        where = tuple(target.slices.get(d, slice(None)) for d in dims)
        return AsyncArray(target.store, key, meta), where, target
    if target.append_dim is None or target.append_dim not in dims:
        return AsyncArray(target.store, key, meta), None, target
    axis = dims.index(target.append_dim)
    if target.offset is None:  # the first variable: its committed growth sets the offset
        meta, offset = await appends.grow_first(target.store, key, meta, var.shape, axis, name)
        target = dataclasses.replace(target, offset=offset)
    else:
        offset = target.offset
        meta = await appends.grow_at(target.store, key, meta, var.shape, axis, name, offset)
    array = target.grown.add(AsyncArray(target.store, key, meta), axis, offset)
    rows = slice(offset, offset + var.shape[axis])
    where = tuple(rows if d == axis else slice(None) for d in range(len(dims)))
    return array, where, target


def to_zarr(ds: xr.Dataset, store: StoreLike, **options: Any) -> Any:
    """Write `ds` as a Zarr group with aiozarr: `xarray.Dataset.to_zarr`'s layout and CF
    encoding (xarray's coders), so xarray with zarr-python reads it back identical.

    Options: `group`, `mode` ("w-" default: fail if the group exists; "w" overwrite; "a"
    add or append, creating the group if missing; "r+" write into existing arrays),
    `zarr_format` (3, with `dimension_names`; or 2, with `_ARRAY_DIMENSIONS`; unset: the
    format of the group written into, or of the nearest group above a new one, else 3;
    one that differs from the hierarchy's is refused), `encoding` (per variable, in place
    of its own `.encoding` as in xarray: `chunks`, `shards`, `compressors`, `filters`,
    `serializer` (dicts, aiozarr or zarr-python codecs), `fill_value`, `write_empty_chunks`
    and xarray's CF keys `dtype`, `units`, `calendar`, `scale_factor`, `add_offset`,
    `_FillValue`, `missing_value`),
    `region` (`{dim: slice or "auto"}`, or "auto": found from the stored coordinates),
    `append_dim` (every variable along it grows from its stored shape and takes its rows
    at one offset, so concurrent appenders all land), `consolidated` (True: the group's
    snapshot, and those of the groups above it holding one),
    `write_empty_chunks` (store chunks equal to the fill value too), `safe_chunks` (True:
    dask blocks must not share a chunk or shard, and in mode "r+" a region must start
    and end on one, or end at the array's end, as xarray's), `compute` (True),
    `storage_options`.

    Dask-backed variables are written block by block by dask's scheduler (a distributed
    cluster's workers each write their blocks), never gathered in this process; each
    block becomes whole chunks (or shards), so blocks must not share one (the arrays'
    chunks follow the blocks unless `encoding` says otherwise). Metadata and in-memory
    variables are written at once; with `compute=False` the dask-backed values are
    returned as a `dask.delayed.Delayed` that writes them when computed.
    """
    compute = options.pop("compute", True)
    with unwrap_group():
        writes = run(write_metadata_async, ds, store, **options)
    delayed = _delayed(writes)
    if delayed is None or not compute:
        return delayed
    delayed.compute()
    return None
