"""The `engine="aiozarr"` backend: open datasets and data trees lazily.

Opening reads the group's documents (v3 and v2 at once) with, on a store that can list,
its listing; then, unless consolidated metadata answered, every member's metadata in one
batch; then every dimension coordinate (and the two elements xarray's datetime decoder
asks for) in one batch: 2 round trips with consolidated metadata, 3 without (`tree.py`,
`variables.py`). Data variables and other coordinates stay lazy (`lazy_array.py`).
xarray does the CF decoding, from the raw attributes, exactly as for its own zarr
backend. Importing this module imports xarray; `import aiozarr` does not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import anyio
import anyio.lowlevel
import xarray as xr
from xarray.backends import BackendEntrypoint
from xarray.backends.store import StoreBackendEntrypoint

from aiozarr.errors import (
    AiozarrError,
    NodeNotFoundError,
    unwrap_group,
)
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.nodes import hierarchy
from aiozarr.nodes.array import AsyncArray
from aiozarr.storage.protocol import Store
from aiozarr.sync import run
from aiozarr.xarray.target import Target
from aiozarr.xarray.tree import read_tree
from aiozarr.xarray.variables import GroupDataStore, dimensions, group_variables

_DECODERS = (
    "mask_and_scale",
    "decode_times",
    "concat_characters",
    "decode_coords",
    "use_cftime",
    "decode_timedelta",
)
_OPTIONS = (
    "group",
    "storage_options",
    "consolidated",
    "zarr_format",
    "use_zarr_fill_value_as_mask",
)


# xarray's zarr engine's options that change nothing in what is read: `mode` (reading
# in "r+" or "a" is reading; "w" and "w-" would write, and are refused) and
# `cache_members` (members' metadata is read once when the group opens, always).
_READ_MODES = ("r", "r+", "a")
_ACCEPTED = ("mode", "cache_members")


def _check_options(options: dict[str, Any]) -> None:
    mode = options.pop("mode", "r")
    if mode not in _READ_MODES:
        raise ValueError(
            f"the aiozarr xarray engine reads: mode must be one of {', '.join(_READ_MODES)}, "
            f"got {mode!r} (write with Dataset.to_zarr or aiozarr.xarray.to_zarr)"
        )
    options.pop("cache_members", None)
    if options:
        raise TypeError(
            f"the aiozarr xarray engine got unknown option(s) {sorted(options)}; it takes "
            f"{', '.join(_OPTIONS + _DECODERS + _ACCEPTED + ('drop_variables',))}"
        )


def _check_format(zarr_format: int | None) -> None:
    if zarr_format not in (None, 2, 3):
        raise ValueError(f"zarr_format must be 2, 3 or None, got {zarr_format!r}")


def _drop_list(drop_variables: str | Iterable[str] | None) -> list[str]:
    return [drop_variables] if isinstance(drop_variables, str) else list(drop_variables or [])


def _prepare(
    filename_or_obj: Any,
    group: str | None,
    storage_options: Mapping[str, Any] | None,
    zarr_format: int | None,
    kwargs: dict[str, Any],
) -> tuple[Target, dict[str, Any]]:
    """What to open, and xarray's decoder options (taken out of `kwargs`, whose other
    entries are checked)."""
    decoders = {k: kwargs.pop(k) for k in _DECODERS if k in kwargs}
    _check_options(kwargs)
    _check_format(zarr_format)
    return Target(filename_or_obj, group, storage_options), decoders


class AiozarrBackendEntrypoint(BackendEntrypoint):
    """`xr.open_dataset(..., engine="aiozarr")`: Zarr v2/v3 (sharded or not) via aiozarr.

    Opens a URL, a local path, a `Store`, an `aiozarr.Group`, an `aiozarr.Array` (a
    dataset of that array and its dimension coordinates), a zarr-python store, or the
    `dict` a `to_zarr(store={})` wrote into (`target.py`). Options: `group` (a path in
    the store), `storage_options` (for URLs, as `aiozarr.open_group`), `consolidated`
    (None: use it when present, else fall back with xarray's RuntimeWarning; True:
    require it; False: ignore it; a store that cannot hold it, such as icechunk's, is
    opened without it), `zarr_format` (2 or 3: skip the format probe),
    `use_zarr_fill_value_as_mask` (xarray's meaning and default); xarray's zarr engine's
    `mode` ("r", "r+" or "a") and `cache_members` are taken and change nothing.
    Errors are `aiozarr.errors` exceptions; a missing group is `GroupNotFoundError`, also
    a `FileNotFoundError`; an array without dimension names is `DimensionNamesError`,
    also a `KeyError`, as with xarray's zarr engine.
    """

    description = "Open Zarr v2/v3 stores with aiozarr (async, batched object-store reads)"
    url = "https://github.com/aiozarr/aiozarr"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", *_DECODERS, *_OPTIONS)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        # Only when asked by name: zarr paths already belong to xarray's zarr engine.
        return False

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        group: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        consolidated: bool | None = None,
        zarr_format: int | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        **kwargs: Any,
    ) -> xr.Dataset:
        """Open the group `group` as a Dataset (lazy; dimension coordinates are read)."""
        target, decoders = _prepare(filename_or_obj, group, storage_options, zarr_format, kwargs)
        if not target.consolidates:  # as xarray's engine: icechunk's stores, say
            consolidated = False
        drop = _drop_list(drop_variables)
        with unwrap_group():
            variables, attrs = run(
                _open_group_variables,
                target,
                consolidated,
                zarr_format,
                drop,
                use_zarr_fill_value_as_mask,
                _decodes_times(decoders),
            )
        return _decoded(GroupDataStore(target.store, variables, attrs), drop, decoders)

    def open_groups_as_dict(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        group: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        consolidated: bool | None = None,
        zarr_format: int | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        **kwargs: Any,
    ) -> dict[str, xr.Dataset]:
        """Every group at or below `group` as a Dataset, keyed as xarray's zarr engine
        keys them: "/", "/a", "/a/b"; relative to `group` when one is given (".", "b")."""
        target, decoders = _prepare(filename_or_obj, group, storage_options, zarr_format, kwargs)
        if not target.consolidates:  # as xarray's engine: icechunk's stores, say
            consolidated = False
        if target.array is not None:
            raise AiozarrError("a data tree opens from a group, not an array")
        drop = _drop_list(drop_variables)
        with unwrap_group():
            groups = run(
                _open_tree_variables,
                target.store,
                target.path,
                consolidated,
                zarr_format,
                drop,
                use_zarr_fill_value_as_mask,
                _decodes_times(decoders),
            )
        return {
            _tree_key(rel, relative=bool(group)): _decoded(
                GroupDataStore(target.store, variables, attrs), drop, decoders
            )
            for rel, (variables, attrs) in sorted(groups.items())
        }

    def open_datatree(  # type: ignore[override]
        self, filename_or_obj: Any, **kwargs: Any
    ) -> xr.DataTree:
        """The groups at or below `group` as a DataTree (options as `open_dataset`)."""
        return xr.DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))


def _decoded(group: GroupDataStore, drop: list[str], decoders: Mapping[str, Any]) -> xr.Dataset:
    """The group's dataset, decoded by xarray; the elements read for its datetime decoder
    are then dropped (`AiozarrBackendArray.forget_ends`)."""
    ds = StoreBackendEntrypoint().open_dataset(group, drop_variables=drop, **decoders)
    group.forget_ends()
    return ds


def _decodes_times(decoders: Mapping[str, Any]) -> bool:
    """Whether xarray will decode CF datetimes (None, its default, means it will)."""
    decode_times = decoders.get("decode_times")
    return decode_times is None or bool(decode_times)


def _tree_key(rel: str, *, relative: bool) -> str:
    rel = rel.strip("/")
    if relative:
        return rel or "."
    return "/" + rel


async def _open_group_variables(
    target: Target,
    consolidated: bool | None,
    zarr_format: int | None,
    drop: list[str],
    mask: bool | None,
    times: bool,
) -> tuple[dict[str, xr.Variable], dict[str, Any]]:
    store, path = target.store, target.path
    if target.array is not None:
        return await _array_variables(target.array, path, drop, mask, times)
    tree = await read_tree(
        store,
        path,
        consolidated=consolidated,
        zarr_format=zarr_format,
        warn_unconsolidated=True,
    )
    meta, arrays = tree[""]
    return await group_variables(store, path, meta, arrays, drop, mask, times)


async def _array_variables(
    array: AsyncArray, parent: str, drop: list[str], mask: bool | None, times: bool
) -> tuple[dict[str, xr.Variable], dict[str, Any]]:
    """One array and the dimension coordinates beside it, without reading its group."""
    name = array.path.rpartition("/")[2]
    meta = array.metadata
    fmt: Literal[2, 3] = 3 if meta.zarr_format == 3 else 2
    arrays: dict[str, ArrayMetadata] = {name: meta}

    async def coordinate(dim: str) -> None:
        with contextlib.suppress(NodeNotFoundError):
            found = await hierarchy.read_node(array.store, hierarchy.join(parent, dim), fmt)
            if isinstance(found, ArrayMetadata):
                arrays[dim] = found

    async with anyio.create_task_group() as tg:
        for dim in set(dimensions(name, meta)) - {name}:
            tg.start_soon(coordinate, dim)
    group = GroupMetadata(zarr_format=fmt, attributes={})
    variables, _ = await group_variables(array.store, parent, group, arrays, drop, mask, times)
    return variables, {}


async def _open_tree_variables(
    store: Store,
    path: str,
    consolidated: bool | None,
    zarr_format: int | None,
    drop: list[str],
    mask: bool | None,
    times: bool,
) -> dict[str, tuple[dict[str, xr.Variable], dict[str, Any]]]:
    tree = await read_tree(
        store,
        path,
        consolidated=consolidated,
        recursive=True,
        zarr_format=zarr_format,
        warn_unconsolidated=True,
    )
    out: dict[str, tuple[dict[str, xr.Variable], dict[str, Any]]] = {}

    async def one(rel: str) -> None:
        meta, arrays = tree[rel]
        out[rel] = await group_variables(
            store, hierarchy.join(path, rel), meta, arrays, drop, mask, times
        )

    async with anyio.create_task_group() as tg:
        for rel in tree:
            tg.start_soon(one, rel)
    return out
