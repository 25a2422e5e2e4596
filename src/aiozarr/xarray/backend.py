"""The `engine="aiozarr"` backend: open datasets and data trees lazily.

Opening reads the group's documents (v3 and v2 at once), then, unless consolidated
metadata answers, its listing, then every member's metadata in one batch, then every
dimension coordinate (and the two elements xarray's datetime decoder asks for) in one
batch: 2 round trips consolidated; 4 unconsolidated, 3 once this process has seen the
group unconsolidated (the listing then goes out with the documents). Data variables and
other coordinates stay lazy. xarray does the CF decoding, from the raw attributes,
exactly as for its own zarr backend. Importing this module imports xarray; `import aiozarr`
does not.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Literal

import anyio
import anyio.lowlevel
import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.store import StoreBackendEntrypoint
from xarray.backends.zarr import FillValueCoder
from xarray.core import indexing

from aiozarr import hierarchy, hierarchy_walk
from aiozarr.api import resolve_store
from aiozarr.array import AsyncArray
from aiozarr.errors import (
    AiozarrError,
    GroupNotFoundError,
    MetadataError,
    NodeNotFoundError,
    unwrap_group,
)
from aiozarr.metadata import consolidated as v2_consolidated
from aiozarr.metadata import v3
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.storage.base import Store
from aiozarr.sync import run

__all__ = ["AiozarrBackendArray", "AiozarrBackendEntrypoint", "read_tree", "store_of"]

DIMENSION_KEY = "_ARRAY_DIMENSIONS"  # where xarray keeps a v2 array's dimension names

Node = ArrayMetadata | GroupMetadata


class AiozarrBackendArray(BackendArray):
    """A lazy xarray variable over an `AsyncArray`.

    Basic and outer (orthogonal) keys go straight to aiozarr's engine; a vectorized key
    is read as its outer bounding selection, then picked out with numpy (xarray's
    `OUTER` indexing support does that split).

    Reads of the same basic selection that overlap in time on one event loop are made
    once (a coordinate shared by several variables loaded together); the others get a
    copy of its values. The first and last element of a CF datetime variable, which
    xarray's decoder asks for one after the other, are read while the dataset opens and
    served without a request.
    """

    __slots__ = ("_inflight", "_known", "array", "dtype", "shape")

    def __init__(self, array: AsyncArray) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self._known: dict[tuple[Any, ...], Any] = {}
        self._inflight: dict[tuple[Any, ...], _SharedRead] = {}

    def __getstate__(self) -> tuple[AsyncArray, dict[tuple[Any, ...], Any]]:
        return self.array, self._known  # reads in flight stay with this process

    def __setstate__(self, state: tuple[AsyncArray, dict[tuple[Any, ...], Any]]) -> None:
        self.__init__(state[0])  # type: ignore[misc]
        self._known = state[1]

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read_sync
        )

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> Any:
        """The values at `key`, read on the caller's event loop (no thread hop)."""
        return await indexing.async_explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read
        )

    def _read_sync(self, key: tuple[Any, ...]) -> Any:
        return run(self._read, key)

    async def _read(self, key: tuple[Any, ...]) -> Any:
        with unwrap_group():
            basic = _basic_key(key, self.shape)
            if basic is None:
                return await self._read_unwrapped(key)
            if basic in self._known:
                return _copy(self._known[basic])
            return await self._read_shared(basic, key)

    async def _read_shared(self, basic: tuple[Any, ...], key: tuple[Any, ...]) -> Any:
        slot = (anyio.lowlevel.current_token(), basic)
        shared = self._inflight.get(slot)
        if shared is not None:  # the same read is under way on this loop: wait for it
            await shared.done.wait()
            if shared.error is not None:
                raise shared.error
            if shared.finished:
                return _copy(shared.value)
            return await self._read_unwrapped(key)  # its reader was cancelled
        shared = self._inflight[slot] = _SharedRead()
        try:
            shared.value = await self._read_unwrapped(key)
            shared.finished = True
            return shared.value
        except Exception as error:
            shared.error = error
            raise
        finally:
            del self._inflight[slot]
            shared.done.set()

    async def _read_unwrapped(self, key: tuple[Any, ...]) -> Any:
        if all(isinstance(k, int | np.integer | slice) for k in key):
            value = await self.array.getitem(key)
        else:
            value = await self.array.get_orthogonal_selection(key)
        if isinstance(value, str) and self.dtype.kind == "T":  # one element of a string array
            return np.asarray(value, dtype=self.dtype)
        return value

    async def read_ends(self) -> None:
        """Read the selections xarray's CF datetime decoder asks for when a dataset opens,
        `first_n_items(data, 1)` and `last_item(data)`, as one coordinate selection of
        the first and the last element, to serve them later without a request."""
        if 0 in self.shape:
            return
        ndim = len(self.shape)
        last = (slice(-1, None),) * ndim
        if math.prod(self.shape) == 1:  # a single element: both read the whole array
            self._known[_basic_key(last, self.shape)] = await self._read_unwrapped(last)  # type: ignore[index]
            return
        first = (0,) * (ndim - 1) + (slice(None, 1),)
        points = tuple(np.array([0, n - 1]) for n in self.shape)
        ends = np.asarray(await self.array.get_coordinate_selection(points))
        for key, value in zip((first, last), ends, strict=True):
            basic = _basic_key(key, self.shape)
            shape = tuple(len(range(*k)) for k in basic if isinstance(k, tuple))  # type: ignore[union-attr]
            self._known[basic] = np.full(shape, value, dtype=ends.dtype)  # type: ignore[index]


class _SharedRead:
    """One read that concurrent readers of the same selection wait for."""

    __slots__ = ("done", "error", "finished", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.finished = False
        self.error: Exception | None = None
        self.value: Any = None


def _basic_key(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...] | None:
    """`key` with every entry made absolute (`None` unless it is integers and slices), so
    that equal selections compare equal however they were written."""
    if len(key) != len(shape):
        return None
    out: list[Any] = []
    for k, n in zip(key, shape, strict=True):
        if isinstance(k, slice):
            out.append(k.indices(n))
        elif isinstance(k, int | np.integer):
            out.append(int(k) + n if k < 0 else int(k))
        else:
            return None
    return tuple(out)


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


# -- reading the hierarchy --------------------------------------------------------------------


# Groups this process found without consolidated metadata, by store and path: opening one
# again lists it while its documents are read (one round trip fewer). A stale entry costs
# one listing, never a wrong answer: consolidated metadata is still used when it answers.
_UNCONSOLIDATED: dict[tuple[str, str], None] = {}
_UNCONSOLIDATED_MAX = 1024


def _group_keys(path: str, consolidated: bool | None, zarr_format: int | None) -> list[str]:
    names = [] if zarr_format == 2 else [hierarchy.V3_KEY]
    if zarr_format != 3:
        names += [".zgroup", ".zattrs"]
        if consolidated is not False:
            names.append(v2_consolidated.ZMETADATA_KEY)
    return [hierarchy.join(path, k) for k in names]


def _parse_group(
    store: Store, path: str, docs: Mapping[str, Any], consolidated: bool | None
) -> GroupMetadata:
    zjson, zgroup, zattrs, zmeta = (
        docs.get(hierarchy.join(path, k))
        for k in (hierarchy.V3_KEY, ".zgroup", ".zattrs", v2_consolidated.ZMETADATA_KEY)
    )
    if zjson is not None:
        key = hierarchy.join(path, hierarchy.V3_KEY)
        meta = v3.parse_node(bytes(memoryview(zjson)), key)
        if isinstance(meta, ArrayMetadata):
            raise GroupNotFoundError(f"{path or '/'!r} in {store!r} is an array, not a group")
    elif zgroup is not None:
        v2_docs = {".zgroup": zgroup, ".zattrs": zattrs, v2_consolidated.ZMETADATA_KEY: zmeta}
        group = hierarchy.parse_v2(path, v2_docs)
        assert isinstance(group, GroupMetadata)  # .zgroup, and .zarray never asked for
        meta = group
    else:
        raise GroupNotFoundError(f"no Zarr group at {path or '/'!r} in {store!r}")
    if consolidated is False:
        return GroupMetadata(zarr_format=meta.zarr_format, attributes=meta.attributes)
    if consolidated is True and meta.consolidated is None:
        raise GroupNotFoundError(f"the group {path or '/'!r} in {store!r} is not consolidated")
    return meta


async def _read_group(
    store: Store, path: str, consolidated: bool | None, zarr_format: int | None = None
) -> tuple[GroupMetadata, list[str] | None]:
    """The group at `path` and, unless consolidated metadata lists them, its child names.

    The group is never listed when its consolidated metadata answers (HTTP cannot list,
    and on S3 a listing is one more request). The listing goes out with the group's
    documents when `consolidated=False`, or when this process already found the group
    unconsolidated; otherwise after them.
    """
    keys = _group_keys(path, consolidated, zarr_format)
    hint = (repr(store), path)
    eager = (
        store.listable
        and consolidated is not True
        and (consolidated is False or hint in _UNCONSOLIDATED)
    )
    docs: dict[str, Any] = {}
    names: list[str] | None = None

    async def fetch() -> None:
        found = await hierarchy.get_documents(store, keys)
        docs.update(zip(keys, found, strict=True))

    async def listing() -> None:
        nonlocal names
        names = [n async for n in store.list_dir(path)]

    async with anyio.create_task_group() as tg:
        tg.start_soon(fetch)
        if eager:
            tg.start_soon(listing)
    meta = _parse_group(store, path, docs, consolidated)
    if meta.consolidated is not None:
        _UNCONSOLIDATED.pop(hint, None)
        return meta, None
    if consolidated is None:
        _UNCONSOLIDATED[hint] = None
        while len(_UNCONSOLIDATED) > _UNCONSOLIDATED_MAX:
            del _UNCONSOLIDATED[next(iter(_UNCONSOLIDATED))]
    if not store.listable:
        raise GroupNotFoundError(
            f"the group {path or '/'!r} in {store!r} has no consolidated metadata and the "
            "store cannot list its members: consolidate it (aiozarr.consolidate_metadata)"
        )
    if names is None:
        await listing()
    return meta, names


async def _read_members(
    store: Store, path: str, names: Iterable[str], zarr_format: int
) -> dict[str, Node]:
    """The metadata of each listed child that is a node, all read in one batch
    (`hierarchy.read_members`); a file or an implicit group is not a member xarray uses."""
    fmt: Literal[2, 3] = 3 if zarr_format == 3 else 2
    wanted = [n for n in names if not n.startswith(".") and n != hierarchy.V3_KEY]
    found = await hierarchy.read_members(store, path, wanted, fmt)
    return {name: node for name, node in sorted(found.items()) if node is not None}


async def read_tree(
    store: Store,
    path: str = "",
    *,
    consolidated: bool | None = None,
    recursive: bool = False,
    zarr_format: int | None = None,
) -> dict[str, tuple[GroupMetadata, dict[str, ArrayMetadata]]]:
    """Each group at or (when `recursive`) below `path`: its metadata and its arrays'.

    Keys are group paths relative to `path` ("" for the group itself).
    """
    path = hierarchy.normalize_path(path)
    meta, names = await _read_group(store, path, consolidated, zarr_format)
    if meta.consolidated is not None:
        return _tree_from_consolidated(meta, recursive)
    members = await _read_members(store, path, names or [], meta.zarr_format)
    tree = {"": (meta, {n: m for n, m in members.items() if isinstance(m, ArrayMetadata)})}
    if not recursive:
        return tree
    # Below the group: the one hierarchy reader, every group listed (as consolidated=False
    # would open it), a level's groups at once; implicit v3 groups are not members.
    groups = {n: m for n, m in members.items() if isinstance(m, GroupMetadata)}
    walk = hierarchy_walk.levels_from(
        store, path, list(groups.items()), use_consolidated=False, implicit=False
    )
    async for batch in walk:
        for rel, found in batch:
            group = GroupMetadata(
                zarr_format=groups[rel].zarr_format, attributes=groups[rel].attributes
            )
            arrays = {n: m for n, m in found.items() if isinstance(m, ArrayMetadata)}
            tree[rel] = (group, arrays)
            groups.update(
                (hierarchy.join(rel, n), m)
                for n, m in found.items()
                if isinstance(m, GroupMetadata)
            )
    return tree


def _tree_from_consolidated(
    meta: GroupMetadata, recursive: bool
) -> dict[str, tuple[GroupMetadata, dict[str, ArrayMetadata]]]:
    members = dict(meta.consolidated or {})
    groups = {"": GroupMetadata(zarr_format=meta.zarr_format, attributes=meta.attributes)}
    if recursive:
        groups.update({p: m for p, m in members.items() if isinstance(m, GroupMetadata)})
    tree: dict[str, tuple[GroupMetadata, dict[str, ArrayMetadata]]] = {}
    for group_path, group_meta in sorted(groups.items()):
        prefix = f"{group_path}/" if group_path else ""
        arrays = {
            p[len(prefix) :]: m
            for p, m in sorted(members.items())
            if isinstance(m, ArrayMetadata) and p.startswith(prefix) and "/" not in p[len(prefix) :]
        }
        tree[group_path] = (group_meta, arrays)
    return tree


# -- variables --------------------------------------------------------------------------------


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
        raise MetadataError(
            f"variable {name!r} {where}: xarray needs a name for each of its "
            f"{meta.ndim} dimensions (write them with aiozarr.xarray.to_zarr or xarray)"
        )
    if len(dims) != meta.ndim:
        raise MetadataError(
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


def _variable(
    name: str,
    lazy: AiozarrBackendArray,
    dims: tuple[str, ...],
    values: np.ndarray | None,
    mask_with_fill_value: bool,
) -> xr.Variable:
    """A raw (undecoded) variable, as xarray's zarr backend builds it."""
    array = lazy.array
    meta = array.metadata
    attrs = {k: v for k, v in meta.attributes.items() if k != DIMENSION_KEY}
    rectilinear = array.rectilinear_grid
    if rectilinear is None:
        chunks, shards = array.chunks, array.shards
        preferred: Any = shards or chunks
    else:  # edge lists: `create_array` reads them back as the same rectilinear grid
        sharded = array.is_sharded
        chunks = array.chunks if sharded else rectilinear.edges
        shards = rectilinear.edges if sharded else None
        preferred = array.write_chunk_sizes
    encoding: dict[str, Any] = {
        "chunks": chunks,
        "preferred_chunks": dict(zip(dims, preferred, strict=True)),
        "shards": shards,
    }
    if array.dtype.kind == "T":  # keeps xarray's string coder from converting it eagerly
        encoding["dtype"] = array.dtype
    if mask_with_fill_value:
        if meta.fill_value is not None:
            attrs["_FillValue"] = meta.fill_value
    else:
        if meta.zarr_format == 3:
            encoding["fill_value"] = meta.fill_value
        if "_FillValue" in attrs:
            attrs["_FillValue"] = FillValueCoder.decode(attrs["_FillValue"], meta.dtype)
    data: Any = values if values is not None else indexing.LazilyIndexedArray(lazy)
    return xr.Variable(dims, data, attrs, encoding)


async def _group_variables(
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
        values[name] = await opened[name].array.getitem(...)

    async with anyio.create_task_group() as tg:
        for name in index_names:
            tg.start_soon(load, name)
        for name in probed:
            tg.start_soon(opened[name].read_ends)
    mask = meta.zarr_format != 3 if mask_with_fill_value is None else mask_with_fill_value
    variables = {
        name: _variable(name, opened[name], dims[name], values.get(name), mask) for name in opened
    }
    attrs = {k: v for k, v in meta.attributes.items() if not k.lower().startswith("_nc")}
    return variables, attrs


def _is_cf_datetime(attrs: Mapping[str, Any]) -> bool:
    units = attrs.get("units")
    return isinstance(units, str) and "since" in units  # xarray's CFDatetimeCoder test


class _DataStore(AbstractDataStore):
    """The variables and attributes of one group, already read, for xarray's decoder."""

    def __init__(
        self, store: Store, variables: dict[str, xr.Variable], attrs: dict[str, Any]
    ) -> None:
        self.store = store
        self._variables = variables
        self._attrs = attrs

    def load(self) -> tuple[dict[str, xr.Variable], dict[str, Any]]:
        return self._variables, self._attrs

    def get_dimensions(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for var in self._variables.values():
            sizes.update(zip(map(str, var.dims), var.shape, strict=True))
        return sizes

    def close(self) -> None:
        pass  # nothing held open: the store's connections belong to the process


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
                    return data.array.store
                data = getattr(data, "array", None)
        opened = getattr(getattr(one, "_close", None), "__self__", None)
        if isinstance(opened, _DataStore):
            return opened.store
    raise ValueError(f"this {type(obj).__name__} was not opened with engine='aiozarr'")


# -- the backend ------------------------------------------------------------------------------

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


class _Target:
    """What to open: a store, the group's path in it, and (for an array) its name."""

    def __init__(
        self,
        filename_or_obj: Any,
        group: str | None,
        storage_options: Mapping[str, Any] | None,
    ) -> None:
        from aiozarr.group import AsyncGroup
        from aiozarr.sync import Array, Group

        obj = filename_or_obj
        obj = obj.async_group if isinstance(obj, Group) else obj
        obj = obj.async_array if isinstance(obj, Array) else obj
        self.array: AsyncArray | None = None
        if isinstance(obj, AsyncGroup):
            self.store = obj.store
            self.path = hierarchy.normalize_path(hierarchy.join(obj.path, group or ""))
        elif isinstance(obj, AsyncArray):
            if group or not obj.path:
                raise AiozarrError(
                    "an array opens as a dataset of itself and its dimension coordinates, "
                    "which live in its parent group: pass an array below the store's root, "
                    "without group="
                )
            self.store, self.array = obj.store, obj
            self.path = obj.path.rpartition("/")[0]
        elif hasattr(obj, "store") and hasattr(obj, "path"):
            raise AiozarrError(
                f"the aiozarr engine opens a URL, a path, a Store, or an aiozarr Group or "
                f"Array, not a {type(obj).__name__}"
            )
        else:
            self.store = resolve_store(obj, mode="r", storage_options=storage_options)
            self.path = hierarchy.normalize_path(group or "")


def _check_options(options: Mapping[str, Any]) -> None:
    if options:
        raise TypeError(
            f"the aiozarr xarray engine got unknown option(s) {sorted(options)}; "
            f"it takes {', '.join(_OPTIONS + _DECODERS + ('drop_variables',))}"
        )


def _check_format(zarr_format: int | None) -> None:
    if zarr_format not in (None, 2, 3):
        raise ValueError(f"zarr_format must be 2, 3 or None, got {zarr_format!r}")


def _drop_list(drop_variables: str | Iterable[str] | None) -> list[str]:
    return [drop_variables] if isinstance(drop_variables, str) else list(drop_variables or [])


class AiozarrBackendEntrypoint(BackendEntrypoint):
    """`xr.open_dataset(..., engine="aiozarr")`: Zarr v2/v3 (sharded or not) via aiozarr.

    Opens a URL, a local path, a `Store`, an `aiozarr.Group`, or an `aiozarr.Array` (a
    dataset of that array and its dimension coordinates). Options: `group` (a path in the
    store), `storage_options` (for URLs, as `aiozarr.open_group`), `consolidated` (None:
    use it when present; True: require it; False: ignore it), `zarr_format` (2 or 3: skip
    the format probe), `use_zarr_fill_value_as_mask` (xarray's meaning and default).
    Errors are `aiozarr.errors` exceptions; a missing group is `GroupNotFoundError`, also
    a `FileNotFoundError`.
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
        decoders = {k: kwargs.pop(k) for k in _DECODERS if k in kwargs}
        _check_options(kwargs)
        _check_format(zarr_format)
        target = _Target(filename_or_obj, group, storage_options)
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
        return StoreBackendEntrypoint().open_dataset(
            _DataStore(target.store, variables, attrs), drop_variables=drop, **decoders
        )

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
        decoders = {k: kwargs.pop(k) for k in _DECODERS if k in kwargs}
        _check_options(kwargs)
        _check_format(zarr_format)
        target = _Target(filename_or_obj, group, storage_options)
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
            _tree_key(rel, relative=bool(group)): StoreBackendEntrypoint().open_dataset(
                _DataStore(target.store, variables, attrs), drop_variables=drop, **decoders
            )
            for rel, (variables, attrs) in sorted(groups.items())
        }

    def open_datatree(  # type: ignore[override]
        self, filename_or_obj: Any, **kwargs: Any
    ) -> xr.DataTree:
        """The groups at or below `group` as a DataTree (options as `open_dataset`)."""
        return xr.DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))


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
    target: _Target,
    consolidated: bool | None,
    zarr_format: int | None,
    drop: list[str],
    mask: bool | None,
    times: bool,
) -> tuple[dict[str, xr.Variable], dict[str, Any]]:
    store, path = target.store, target.path
    if target.array is not None:
        return await _array_variables(target.array, path, drop, mask, times)
    tree = await read_tree(store, path, consolidated=consolidated, zarr_format=zarr_format)
    meta, arrays = tree[""]
    return await _group_variables(store, path, meta, arrays, drop, mask, times)


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
    variables, _ = await _group_variables(array.store, parent, group, arrays, drop, mask, times)
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
        store, path, consolidated=consolidated, recursive=True, zarr_format=zarr_format
    )
    out: dict[str, tuple[dict[str, xr.Variable], dict[str, Any]]] = {}

    async def one(rel: str) -> None:
        meta, arrays = tree[rel]
        out[rel] = await _group_variables(
            store, hierarchy.join(path, rel), meta, arrays, drop, mask, times
        )

    async with anyio.create_task_group() as tg:
        for rel in tree:
            tg.start_soon(one, rel)
    return out
