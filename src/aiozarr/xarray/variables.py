"""A group's variables as xarray's zarr backend builds them (raw, undecoded; xarray
does the CF decoding), and the `AbstractDataStore` that hands them to xarray."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
import xarray as xr
from xarray.backends.common import NONE_VAR_NAME, AbstractDataStore
from xarray.backends.zarr import FillValueCoder
from xarray.core import indexing

from aiozarr.errors import DimensionNamesError, MetadataError
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.nodes import hierarchy
from aiozarr.nodes.array import AsyncArray
from aiozarr.storage.protocol import Store
from aiozarr.xarray.encoding import chunk_encoding, codec_encoding
from aiozarr.xarray.lazy_array import AiozarrBackendArray

__all__ = [
    "DIMENSION_KEY",
    "GroupDataStore",
    "dimensions",
    "group_variables",
    "raw_variable",
    "store_of",
]

DIMENSION_KEY = "_ARRAY_DIMENSIONS"  # where xarray keeps a v2 array's dimension names


def dimensions(name: str, meta: ArrayMetadata) -> tuple[str, ...]:
    """The dimension names of the array `name`: v3 `dimension_names`, v2 `_ARRAY_DIMENSIONS`."""
    if meta.zarr_format == 3:
        dims = meta.dimension_names
        where = "has no dimension_names"
    else:
        dims = meta.attributes.get(DIMENSION_KEY)
        where = f"has no {DIMENSION_KEY} attribute"
    if dims is None and meta.ndim == 0:
        return ()  # a scalar needs no names (zarr-python writes none for it)
    if dims is None or any(d is None for d in dims):
        raise DimensionNamesError(
            f"variable {name!r} {where}, which is required for xarray to determine variable "
            f"dimensions: it needs a name for each of its {meta.ndim} dimensions (write them "
            "with aiozarr.xarray.to_zarr or xarray)"
        )
    if len(dims) != meta.ndim:
        raise DimensionNamesError(
            f"variable {name!r} has {len(dims)} dimension names {list(dims)} "
            f"for {meta.ndim} dimensions"
        )
    return tuple(str(d) for d in dims)


def _check_sizes(arrays: Mapping[str, ArrayMetadata], dims: Mapping[str, tuple[str, ...]]) -> None:
    sizes: dict[str, tuple[int, str]] = {}
    for name, meta in arrays.items():
        for dim, size in zip(dims[name], meta.shape, strict=True):
            seen = sizes.setdefault(dim, (size, name))
            if seen[0] != size:
                raise MetadataError(
                    f"variable {name!r} has dimension {dim!r} of size {size}, "
                    f"but variable {seen[1]!r} has it of size {seen[0]}"
                )


def _is_netcdf_attribute(name: str) -> bool:
    """NCZarr's own attributes (`_nczarr_array`, `_nczarr_attr`, ...), which xarray's
    zarr engine leaves out of a variable's and a group's attributes."""
    return name.lower().startswith("_nc")


def raw_variable(
    name: str,
    lazy: AiozarrBackendArray,
    dims: tuple[str, ...],
    values: np.ndarray | None,
    mask_with_fill_value: bool,
) -> xr.Variable:
    """A raw (undecoded) variable, as xarray's zarr backend builds it: attributes, and
    an encoding of chunks, shards and codecs (`encoding.py`)."""
    array = lazy.async_array
    meta = array.metadata
    attrs = {
        k: v
        for k, v in meta.attributes.items()
        if k != DIMENSION_KEY and not _is_netcdf_attribute(k)
    }
    encoding = chunk_encoding(array, dims) | codec_encoding(meta)
    if array.dtype.kind == "T":  # keeps xarray's string coder from converting it eagerly
        encoding["dtype"] = array.dtype
    own_fill = meta.zarr_format == 3 and "_FillValue" in attrs
    if own_fill:  # encoded by xarray's v3 writer (floats as base64)
        attrs["_FillValue"] = FillValueCoder.decode(attrs["_FillValue"], meta.dtype)
    if mask_with_fill_value:
        # v3: a variable's own _FillValue is its mask; zarr's fill_value (0 for integers
        # unless given) may be a value it holds (a time at the epoch, a coordinate 0)
        if meta.fill_value is not None and not own_fill:
            attrs["_FillValue"] = meta.fill_value
    elif meta.zarr_format == 3:
        encoding["fill_value"] = meta.fill_value
    data: Any = values if values is not None else indexing.LazilyIndexedArray(lazy)
    return xr.Variable(dims, data, attrs, encoding)


async def group_variables(
    store: Store,
    path: str,
    meta: GroupMetadata,
    arrays: Mapping[str, ArrayMetadata],
    drop_variables: Iterable[Hashable],
    mask_with_fill_value: bool | None,
    decode_times: bool,
) -> tuple[dict[str, xr.Variable], dict[str, Any]]:
    """The group's variables, with every dimension coordinate read in one batch.

    With `decode_times`, the first and last element of every other CF datetime variable
    (units "... since ...") are read in the same batch: xarray's decoder reads them when
    the dataset opens, one after the other, which would be two more round trips.
    """
    dropped = set(drop_variables)
    arrays = {n: m for n, m in arrays.items() if n not in dropped}
    dims = {name: dimensions(name, m) for name, m in arrays.items()}
    _check_sizes(arrays, dims)
    opened = {
        name: AiozarrBackendArray(AsyncArray(store, hierarchy.join(path, name), m))
        for name, m in arrays.items()
    }
    index_names = [n for n, d in dims.items() if d == (n,)]
    probed = [
        n
        for n, m in arrays.items()
        if decode_times and n not in index_names and _is_cf_datetime(m.attributes)
    ]
    values: dict[str, np.ndarray] = {}

    async def load(name: str) -> None:
        values[name] = await opened[name].async_array.getitem(...)

    async with anyio.create_task_group() as tg:
        for name in index_names:
            tg.start_soon(load, name)
        for name in probed:
            tg.start_soon(opened[name].read_ends)
    mask = meta.zarr_format != 3 if mask_with_fill_value is None else mask_with_fill_value
    variables = {
        name: raw_variable(name, opened[name], dims[name], values.get(name), mask)
        for name in opened
    }
    attrs = {k: v for k, v in meta.attributes.items() if not _is_netcdf_attribute(k)}
    return variables, attrs


def _is_cf_datetime(attrs: Mapping[str, Any]) -> bool:
    units = attrs.get("units")
    return isinstance(units, str) and "since" in units  # xarray's CFDatetimeCoder test


class GroupDataStore(AbstractDataStore):
    """The variables and attributes of one group, already read, for xarray's decoder."""

    def __init__(
        self, store: Store, variables: dict[str, xr.Variable], attrs: dict[str, Any]
    ) -> None:
        self.store = store
        self._variables = variables
        self._attrs = attrs

    def load(self) -> tuple[dict[Hashable, xr.Variable], dict[str, Any]]:
        """The variables (the one xarray stored for a variable named `None` back under
        `None`) and the group's attributes."""
        variables = {
            (None if name == NONE_VAR_NAME else name): var for name, var in self._variables.items()
        }
        return variables, self._attrs

    def get_dimensions(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for var in self._variables.values():
            sizes.update(zip(map(str, var.dims), var.shape, strict=True))
        return sizes

    def close(self) -> None:
        pass  # nothing held open: the store's connections belong to the process

    def forget_ends(self) -> None:
        """Once xarray has decoded the variables, drop the elements read for its datetime
        decoder (`AiozarrBackendArray.forget_ends`): later reads ask the store."""
        for var in self._variables.values():
            data = var._data  # not `.data`, which would read the values
            if isinstance(data, indexing.LazilyIndexedArray):
                data = data.array
            if isinstance(data, AiozarrBackendArray):
                data.forget_ends()


def store_of(obj: xr.Dataset | xr.DataArray | xr.DataTree) -> Store:
    """The store a dataset (or data tree) opened with `engine="aiozarr"` reads from:
    `store_of(ds).stats()` gives its request statistics. A data array is found through
    its lazy values (while some are not loaded)."""
    objects: list[Any] = (
        [node.dataset for node in obj.subtree] if isinstance(obj, xr.DataTree) else [obj]
    )
    for one in objects:
        variables = (
            [one.variable, *one.coords.variables.values()]
            if isinstance(one, xr.DataArray)
            else list(one.variables.values())
        )
        for var in variables:
            data = var._data
            while data is not None:
                if isinstance(data, AiozarrBackendArray):
                    return data.async_array.store
                data = getattr(data, "array", None)
        opened = getattr(getattr(one, "_close", None), "__self__", None)
        if isinstance(opened, GroupDataStore):
            return opened.store
    raise ValueError(f"this {type(obj).__name__} was not opened with engine='aiozarr'")
