"""Where `to_zarr` puts each variable of a write into a group already there, checked
before anything is written: a region's slices (found for "auto"), the stored arrays a
region or `r+` write needs, and each variable's dimensions and shape against its stored
array (the whole array, the rows an append adds, or the region's part). A value smaller
than where it goes is refused, as xarray refuses it: writing it would broadcast it over
the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from aiozarr.errors import InvalidValueError
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.nodes import hierarchy
from aiozarr.nodes.array import AsyncArray
from aiozarr.storage.protocol import Store
from aiozarr.xarray.lazy_array import AiozarrBackendArray
from aiozarr.xarray.variables import dimensions, raw_variable

__all__ = [
    "PlacementError",
    "Region",
    "check_append_dim",
    "check_existing_encoding",
    "check_placements",
    "check_targets",
    "chunks_of",
    "in_stored_order",
    "resolve_region",
]

Region = Mapping[str, "slice | Literal['auto']"] | Literal["auto"]

Prepared = Mapping[str, tuple[xr.Variable, dict[str, Any]]]


def chunks_of(name: str, var: xr.Variable, encoding: Mapping[str, Any]) -> Any:
    """The chunk shape of the array `var` (the variable `name`) is written into: its
    encoding's `chunks` (an int for every dimension, as xarray takes it), else one
    chunk per dask block (the first block's size), else None (the default's)."""
    chunks = encoding.get("chunks")
    if isinstance(chunks, int | np.integer):
        return (int(chunks),) * var.ndim
    if chunks is not None and len(chunks) != var.ndim:
        raise PlacementError(f"variable {name!r}: encoding chunks {chunks} for dims {var.dims}")
    if chunks is None and var.chunks is not None:
        return tuple(c[0] if c else 1 for c in var.chunks)
    return chunks


def in_stored_order(
    name: str, var: xr.Variable, existing: Mapping[str, ArrayMetadata]
) -> xr.Variable:
    """`var` with its dimensions in the order of the stored array `name` when they are
    the same names in another order, as xarray's `to_zarr` transposes them (an append, a
    region or a mode "a" write of `("y", "t")` into a `("t", "y")` array); else as it is
    (other names: refused by `check_placements`)."""
    if name not in existing:
        return var
    dims = dimensions(name, existing[name])
    if var.dims != dims and sorted(var.dims) == sorted(dims) and len(set(dims)) == len(dims):
        return var.transpose(*dims)
    return var


class PlacementError(InvalidValueError, ValueError):
    """A variable does not fit the stored array it is written into: other dimensions,
    another shape, or another size than the region's along one of them. Also a
    `ValueError`, as xarray's refusal of the same write."""


def check_targets(
    prepared: Prepared,
    existing: Mapping[str, ArrayMetadata],
    mode: str,
    region: Mapping[str, slice] | None,
) -> None:
    """Refuse, before writing anything, variables a region or `r+` write cannot place."""
    if mode == "r+":
        missing = sorted(n for n in prepared if n not in existing)
        if missing:
            raise ValueError(
                f"variables {missing} are not in the store: mode 'r+' only writes into "
                "existing arrays"
            )
    if region is not None:
        outside = sorted(n for n, (v, _) in prepared.items() if not set(region) & set(v.dims))
        if outside:
            raise ValueError(
                f"variables {outside} have none of the region's dimensions {sorted(region)}: "
                f"drop them from the dataset before a region write (.drop_vars({outside!r}))"
            )


def check_append_dim(existing: Mapping[str, ArrayMetadata], append_dim: str | None) -> None:
    """Refuse, as xarray does, an `append_dim` that is no dimension of the stored arrays:
    every variable would then be written whole over its stored values (a misspelt
    dimension overwrote the rows stored instead of appending after them)."""
    if append_dim is None or not existing:
        return
    stored = {d: m.shape[i] for n, m in existing.items() for i, d in enumerate(dimensions(n, m))}
    if append_dim not in stored:
        raise PlacementError(
            f"append_dim={append_dim!r} does not match any existing dataset dimensions {stored}"
        )


def check_existing_encoding(
    existing: Mapping[str, ArrayMetadata], encoding: Mapping[str, Any] | None
) -> None:
    """Refuse, as xarray does, an `encoding` for a variable already stored: it is written
    with its stored layout and CF encoding, so the one given would be dropped silently."""
    given = sorted(str(n) for n in (encoding or {}) if str(n) in existing)
    if given:
        raise PlacementError(f"variable {given[0]!r} already exists, but encoding was provided")


def check_placements(
    prepared: Prepared,
    existing: Mapping[str, ArrayMetadata],
    region: Mapping[str, slice] | None,
    append_dim: str | None,
) -> None:
    """Refuse with `PlacementError`, before writing anything, variables that do not fit
    their stored arrays: other dimensions; in a region write, another size than the
    region's slice along its dimensions or than the stored array along the others; in
    an append, another size along a dimension but `append_dim`; else another shape."""
    if append_dim is not None and region is None:
        _check_append_members(prepared, existing, append_dim)
    for name, (var, _) in prepared.items():
        if name not in existing:
            continue
        meta = existing[name]
        dims = dimensions(name, meta)
        if dims != var.dims:
            raise PlacementError(
                f"variable {name!r} has dimensions {var.dims}, the stored one {dims}"
            )
        if region is not None:
            _check_region(name, var, meta, dims, region)
        elif meta.shape != var.shape and append_dim not in dims:
            raise PlacementError(
                f"variable {name!r} has shape {var.shape}, the stored array {meta.shape}"
            )
        else:
            for dim, have, new in zip(dims, meta.shape, var.shape, strict=True):
                if have != new and dim != append_dim:
                    raise PlacementError(
                        f"variable {name!r}: dimension {dim!r} has size {new}, "
                        f"the stored array {have}; only {append_dim!r} can grow"
                    )


def _check_append_members(
    prepared: Prepared, existing: Mapping[str, ArrayMetadata], append_dim: str
) -> None:
    """Refuse an append that would leave the group's arrays of different lengths along
    `append_dim` (xarray writes it; neither engine opens the group after): a stored array
    along it that the dataset lacks, left short, or a new one, created with the new rows
    only."""
    along = {n for n, m in existing.items() if append_dim in dimensions(n, m)}
    if not along:
        return
    short = sorted(along - set(prepared))
    if short:
        raise PlacementError(
            f"append along {append_dim!r}: the stored variables {short} are not in the "
            "dataset and would be left shorter than the others; give their rows too"
        )
    new = sorted(n for n, (v, _) in prepared.items() if n not in existing and append_dim in v.dims)
    if new:
        raise PlacementError(
            f"append along {append_dim!r}: the variables {new} are not stored, and created "
            "with the appended rows only they would be shorter than the others; write them "
            "whole first (mode='a' without append_dim)"
        )


def _check_region(
    name: str,
    var: xr.Variable,
    meta: ArrayMetadata,
    dims: tuple[str, ...],
    region: Mapping[str, slice],
) -> None:
    """Refuse a variable of another size than the region's slice along a dimension of
    the region, or than the stored array along another (written whole)."""
    for dim, stored, size in zip(dims, meta.shape, var.shape, strict=True):
        if dim in region:
            wanted = len(range(*region[dim].indices(stored)))
            if size != wanted:
                raise PlacementError(
                    f"variable {name!r} has size {size} along {dim!r}, the region "
                    f"{region[dim]} selects {wanted} of the stored {stored}; give the "
                    "region the variable's size"
                )
        elif size != stored:
            raise PlacementError(
                f"variable {name!r} has size {size} along {dim!r}, the stored array "
                f"{stored}; a dimension outside the region is written whole"
            )


async def resolve_region(
    ds: xr.Dataset,
    region: Region | None,
    store: Store,
    path: str,
    existing: Mapping[str, ArrayMetadata],
    mode: str,
) -> dict[str, slice] | None:
    """`region` as `{dim: slice}`: "auto" entries found from the stored index coordinates,
    as xarray's `to_zarr` finds them; None for no region."""
    if region is None:
        return None
    if region == "auto":
        region = dict.fromkeys(map(str, ds.dims), "auto")
    if not isinstance(region, Mapping):
        raise TypeError(f"region must be a dict of slices or 'auto', got {region!r}")
    slices: dict[str, slice] = {}
    for dim, where in region.items():
        if dim not in ds.dims:
            raise ValueError(f"region dimension {dim!r} is not a dimension of the dataset")
        if isinstance(where, slice):
            if where.step not in (None, 1):
                raise ValueError(f"region slice for {dim!r} has a step: {where}")
            slices[dim] = where
        elif where != "auto":
            raise TypeError(f"region[{dim!r}] must be a slice or 'auto', got {where!r}")
        elif mode not in ("a", "r+"):
            raise ValueError(f"region='auto' needs mode 'a' or 'r+', got {mode!r}")
        elif dim not in ds.indexes:
            slices[dim] = slice(0, ds.sizes[dim])
        else:
            slices[dim] = await _auto_slice(ds, dim, store, path, existing)
    return slices


async def _auto_slice(
    ds: xr.Dataset, dim: str, store: Store, path: str, existing: Mapping[str, ArrayMetadata]
) -> slice:
    from xarray import conventions

    if dim not in existing:
        raise KeyError(f"region='auto': the store has no coordinate {dim!r} to find it in")
    array = AsyncArray(store, hierarchy.join(path, dim), existing[dim])
    values = await array.getitem(...)
    mask = array.metadata.zarr_format != 3  # xarray's default, as when opening
    raw = raw_variable(
        dim, AiozarrBackendArray(array), dimensions(dim, array.metadata), values, mask
    )
    stored = pd.Index(conventions.decode_cf_variable(dim, raw).values)
    positions = stored.get_indexer(ds.indexes[dim])
    if (positions == -1).any():
        raise KeyError(
            f"region='auto': not every value of coordinate {dim!r} is in the stored "
            "coordinate; a region write cannot add values (use append_dim=)"
        )
    if positions.size and (np.diff(positions) != 1).any():
        raise ValueError(
            f"region='auto': the values of coordinate {dim!r} are not one contiguous, "
            "increasing run of the stored coordinate"
        )
    if not positions.size:
        return slice(0, 0)
    return slice(int(positions[0]), int(positions[-1]) + 1)
