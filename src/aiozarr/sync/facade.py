"""The sync facade: `Array` and `Group` call the async objects through the portal.

Each I/O method is one `run` line, so sync and async cannot drift.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any

import numpy as np

from aiozarr.engine.entry import ShowProgress
from aiozarr.nodes import display
from aiozarr.nodes.array import ArrayInfo, AsyncArray
from aiozarr.nodes.group import AsyncGroup, GroupInfo
from aiozarr.sync import group_display
from aiozarr.sync.portal import run


def local_value(value: Any) -> Any:
    """`value` as numpy, converted on the caller's thread, when it is an array-like that is
    not numpy's own (an aiozarr `Array`, a dask or xarray array, ...).

    The write converts it anyway (`np.asarray`), but on aiozarr's loop: an aiozarr
    `Array` would read itself through the sync API there (`SyncInLoopError`), and an
    array whose reads wait on that loop (dask over aiozarr) would block it."""
    if hasattr(value, "__array__") and not isinstance(value, np.ndarray | np.generic):
        return np.asarray(value)
    return value


def local_data(options: dict[str, Any]) -> dict[str, Any]:
    """`create_array`'s options with their `data=` converted by `local_value`."""
    if options.get("data") is None:
        return options
    return {**options, "data": local_value(options["data"])}


class Attributes(MutableMapping[str, Any]):
    """A node's attributes; setting or deleting one stores the change."""

    def __init__(self, node: AsyncArray | AsyncGroup) -> None:
        self._node = node

    def __getitem__(self, key: str) -> Any:
        return self._node.attrs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._node.attrs)

    def __len__(self) -> int:
        return len(self._node.attrs)

    def __setitem__(self, key: str, value: Any) -> None:
        return run(self._node.update_attributes, {key: value})  # type: ignore[func-returns-value]

    def __delitem__(self, key: str) -> None:
        return run(self._node.delete_attributes, [key])  # type: ignore[func-returns-value]

    def update(self, other: Mapping[str, Any] = (), /, **kwargs: Any) -> None:  # type: ignore[override]
        return run(self._node.update_attributes, {**dict(other), **kwargs})  # type: ignore[func-returns-value]

    def asdict(self) -> dict[str, Any]:
        return self._node.attrs

    def __repr__(self) -> str:
        return repr(self._node.attrs)


class _Selector:
    """`arr.oindex[...]`, `arr.vindex[...]`, `arr.blocks[...]`: one kind of selection,
    read with `[]` and written with `[] =`."""

    def __init__(
        self, get: Callable[..., Awaitable[Any]], set: Callable[..., Awaitable[None]]
    ) -> None:
        self._get = get
        self._set = set

    def __getitem__(self, selection: Any) -> Any:
        return run(self._get, selection, only_reads=True)

    def __setitem__(self, selection: Any, value: Any) -> None:
        return run(self._set, selection, local_value(value))


class Array:
    """A Zarr array with numpy-like blocking access: `arr[...]`, `arr[...] = v`.

    Every method forwards to `AsyncArray` (available as `async_array`).
    """

    def __init__(self, async_array: AsyncArray) -> None:
        self._async = async_array

    @property
    def async_array(self) -> AsyncArray:
        """The `AsyncArray` this array forwards to (awaitable calls, same engine)."""
        return self._async

    # -- description (no I/O) --------------------------------------------------------------

    shape = property(lambda self: self._async.shape, doc="The array's shape.")
    dtype = property(lambda self: self._async.dtype, doc="The numpy data type.")
    chunks = property(lambda self: self._async.chunks, doc="Chunk shape (inner when sharded).")
    shards = property(lambda self: self._async.shards, doc="Shard shape, or None.")
    is_sharded = property(lambda self: self._async.is_sharded, doc="Whether it is sharded.")
    rectilinear_grid = property(
        lambda self: self._async.rectilinear_grid, doc="The grid when objects differ in shape."
    )
    read_chunk_sizes = property(
        lambda self: self._async.read_chunk_sizes, doc="Per axis, each chunk's length."
    )
    write_chunk_sizes = property(
        lambda self: self._async.write_chunk_sizes, doc="Per axis, each shard's length."
    )
    ndim = property(lambda self: self._async.ndim, doc="Number of dimensions.")
    size = property(lambda self: self._async.size, doc="Number of elements.")
    nbytes = property(lambda self: self._async.nbytes, doc="Decoded size in bytes.")
    fill_value = property(lambda self: self._async.fill_value, doc="Value of unwritten elements.")
    metadata = property(lambda self: self._async.metadata, doc="The array's metadata.")
    path = property(lambda self: self._async.path, doc="Path within the store.")
    name = property(lambda self: self._async.name, doc="Absolute name ('/path').")
    store = property(lambda self: self._async.store, doc="The store holding the array.")
    zarr_format = property(lambda self: self._async.zarr_format, doc="2 or 3.")
    read_only = property(lambda self: self._async.read_only, doc="Whether it cannot be written.")
    nchunks = property(lambda self: self._async.nchunks, doc="Chunks in the grid (inner).")
    order = property(lambda self: self._async.order, doc="v2's order; 'C' for v3.")
    filters = property(lambda self: self._async.filters, doc="Array-to-array codecs.")
    serializer = property(lambda self: self._async.serializer, doc="The array-to-bytes codec.")
    compressors = property(lambda self: self._async.compressors, doc="Bytes-to-bytes codecs.")

    def chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        """The store key of the shard (or chunk) at grid coordinates `chunk_coords`."""
        return self._async.chunk_key(chunk_coords)

    @property
    def attrs(self) -> Attributes:
        """The attributes, as a mutable mapping: `arr.attrs["units"] = "K"` writes the metadata."""
        return Attributes(self._async)

    @property
    def nchunks_initialized(self) -> int:
        """Chunks stored (a property, as zarr-python's; one listing)."""
        return run(self._async.nchunks_initialized, only_reads=True)

    @property
    def oindex(self) -> _Selector:
        """Orthogonal selection: the outer product of per-axis ints, slices, arrays, masks."""
        return _Selector(self._async.get_orthogonal_selection, self._async.set_orthogonal_selection)

    @property
    def vindex(self) -> _Selector:
        """Vectorized selection: points (one integer array per axis) or a boolean mask."""
        return _Selector(self._async.get_vectorized_selection, self._async.set_vectorized_selection)

    @property
    def blocks(self) -> _Selector:
        """Block selection: whole shards (or chunks) by their grid indices."""
        return _Selector(self._async.get_block_selection, self._async.set_block_selection)

    description = property(
        lambda self: self._async.description, doc="What the array is, as one value."
    )

    @property
    def info(self) -> ArrayInfo:
        """The description (a `str` with its fields as attributes); no I/O."""
        return self._async.info()

    def info_complete(self) -> ArrayInfo:
        """`info` with the bytes stored and the chunks initialized (one listing)."""
        return run(self._async.info_complete, only_reads=True)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        """The values along the first axis, one `arr[i]` each; a 0-d array has none to
        iterate over (`TypeError`, as numpy), not an empty sequence."""
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        return f"<Array {self.store!r} {self.name} shape={self.shape} dtype={self.dtype}>"

    def _repr_html_(self) -> str:
        return display.array_html(self._async)

    # -- I/O: one line each ----------------------------------------------------------------

    def __getitem__(self, selection: Any) -> Any:
        return run(
            self._async.getitem, selection, inline=self._async.getitem_inline, only_reads=True
        )

    def __setitem__(self, selection: Any, value: Any) -> None:
        return run(self._async.setitem, selection, local_value(value))

    def getitem(self, selection: Any = ..., *, progress: ShowProgress = None) -> Any:
        """`arr[selection]`, with `progress=True` for a progress bar (or a callback)."""
        return run(self._async.getitem, selection, progress=progress, only_reads=True)

    def setitem(self, selection: Any, value: Any, *, progress: ShowProgress = None) -> None:
        """`arr[selection] = value`, with `progress=True` for a progress bar (or a callback)."""
        return run(self._async.setitem, selection, local_value(value), progress=progress)

    def get_basic_selection(self, selection: Any = ..., *, progress: ShowProgress = None) -> Any:
        """The values at a numpy basic selection (ints, slices with any step, `...`)."""
        return run(self._async.get_basic_selection, selection, progress=progress, only_reads=True)

    def set_basic_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` (broadcast to the selection's shape) at a basic selection."""
        return run(
            self._async.set_basic_selection, selection, local_value(value), progress=progress
        )

    def get_orthogonal_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """The outer product of per-axis selections (ints, slices, integer arrays, masks):
        `arr.oindex[...]`."""
        return run(
            self._async.get_orthogonal_selection, selection, progress=progress, only_reads=True
        )

    def set_orthogonal_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` at the outer product of per-axis selections: `arr.oindex[...] = value`."""
        return run(
            self._async.set_orthogonal_selection, selection, local_value(value), progress=progress
        )

    def get_coordinate_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """The points picked by one integer array per axis, broadcast together:
        `arr.vindex[...]`."""
        return run(
            self._async.get_coordinate_selection, selection, progress=progress, only_reads=True
        )

    def set_coordinate_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` at the points of one integer array per axis (where a point repeats, the
        last value wins)."""
        return run(
            self._async.set_coordinate_selection, selection, local_value(value), progress=progress
        )

    def get_mask_selection(self, mask: Any, *, progress: ShowProgress = None) -> Any:
        """The elements where `mask` (a boolean array of the array's shape) is true, in C order,
        as a 1-d array."""
        return run(self._async.get_mask_selection, mask, progress=progress, only_reads=True)

    def set_mask_selection(self, mask: Any, value: Any, *, progress: ShowProgress = None) -> None:
        """Store `value` where `mask` (a boolean array of the array's shape) is true."""
        return run(self._async.set_mask_selection, mask, local_value(value), progress=progress)

    def get_vectorized_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """`arr.vindex[selection]`: a coordinate or a mask selection."""
        return run(
            self._async.get_vectorized_selection, selection, progress=progress, only_reads=True
        )

    def set_vectorized_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """`arr.vindex[selection] = value`: a coordinate or a mask selection."""
        return run(
            self._async.set_vectorized_selection, selection, local_value(value), progress=progress
        )

    def get_block_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """The elements of whole blocks (shards when sharded, else chunks) by their grid indices:
        `arr.blocks[...]`."""
        return run(self._async.get_block_selection, selection, progress=progress, only_reads=True)

    def set_block_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` in whole blocks (shards when sharded, else chunks): `arr.blocks[...] =
        value`."""
        return run(
            self._async.set_block_selection, selection, local_value(value), progress=progress
        )

    def resize(self, new_shape: Any) -> None:
        """Change the shape; chunks wholly outside the new shape are deleted, as in zarr-python."""
        return run(self._async.resize, new_shape)

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow the array along `axis` by `data` and write it there; the new shape."""
        return run(self._async.append, local_value(data), axis)

    def nbytes_stored(self) -> int:
        """Bytes the array takes in its store, metadata included."""
        return run(self._async.nbytes_stored, only_reads=True)

    def update_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `attributes` into the stored ones and write them; returns the new attributes."""
        return run(self._async.update_attributes, attributes)

    def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the stored attributes with `attributes`; returns them."""
        return run(self._async.replace_attributes, attributes)

    def delete_attributes(self, names: Iterable[str]) -> dict[str, Any]:
        """Remove the attributes `names` from the stored ones; returns the attributes now."""
        return run(self._async.delete_attributes, names)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:  # as numpy and zarr-python: the values are read, never a view
            raise ValueError("`copy=False` isn't supported: reading an aiozarr Array copies")
        values = np.asarray(self[...])
        return values if dtype is None else values.astype(dtype)


class Group:
    """A Zarr group with blocking access: `group["name"]`, `"name" in group`.

    Every method forwards to `AsyncGroup` (available as `async_group`).
    """

    def __init__(self, async_group: AsyncGroup) -> None:
        self._async = async_group

    @property
    def async_group(self) -> AsyncGroup:
        """The `AsyncGroup` this group forwards to."""
        return self._async

    path = property(lambda self: self._async.path, doc="Path within the store.")
    name = property(lambda self: self._async.name, doc="Absolute name ('/path').")
    store = property(lambda self: self._async.store, doc="The store holding the group.")
    metadata = property(lambda self: self._async.metadata, doc="The group's metadata.")
    zarr_format = property(lambda self: self._async.zarr_format, doc="2 or 3.")

    @property
    def attrs(self) -> Attributes:
        """The attributes, as a mutable mapping: `arr.attrs["units"] = "K"` writes the metadata."""
        return Attributes(self._async)

    @property
    def info(self) -> GroupInfo:
        """The description (a `str` with its fields as attributes); no I/O."""
        return self._async.info()

    def info_complete(self) -> GroupInfo:
        """`info` with the members counted (one listing)."""
        return run(self._async.info_complete, only_reads=True)

    def __repr__(self) -> str:
        return f"<Group {self.store!r} {self.name}>"

    def _repr_html_(self) -> str:
        # one level, a bounded number of members: a display of any hierarchy is quick
        return display.group_html(
            self._async, run(group_display.members_text, self._async, only_reads=True)
        )

    def __getitem__(self, name: str) -> Array | Group:
        return _wrap(run(self._async.getitem, name, only_reads=True))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and run(self._async.contains, name, only_reads=True)

    def __iter__(self) -> Iterator[str]:
        return iter(self.member_names())

    def __len__(self) -> int:
        return run(self._async.nmembers, only_reads=True)

    def get(self, name: str, default: Any = None) -> Array | Group | Any:
        """The member `name` (an `Array` or a `Group`), or `default` where there is none."""
        return _wrap_or(run(self._async.get, name, only_reads=True), default)

    def nmembers(self, max_depth: int | None = 0) -> int:
        """How many members there are, `max_depth` levels below the direct ones too."""
        return run(self._async.nmembers, max_depth, only_reads=True)

    def member_names(self) -> list[str]:
        """Names of the members, in listing order (`list(group)`)."""
        return run(self._async.member_names, only_reads=True)

    def keys(self) -> list[str]:
        """Names of the members, sorted (zarr-python's `keys()`)."""
        return run(self._async.keys, only_reads=True)

    def array_keys(self) -> list[str]:
        """Names of the members that are arrays."""
        return run(self._async.array_keys, only_reads=True)

    def group_keys(self) -> list[str]:
        """Names of the members that are groups."""
        return run(self._async.group_keys, only_reads=True)

    def __delitem__(self, name: str) -> None:
        return run(self._async.delitem, name)

    def delitem(self, name: str) -> None:
        """`del group[name]`: delete the member and everything below it."""
        return run(self._async.delitem, name)

    def members(self, max_depth: int | None = 0) -> list[tuple[str, Array | Group]]:
        """`(name, member)` for every member: arrays as `Array`, groups as `Group` (one listing
        and one batch of metadata reads, or the consolidated metadata); as zarr-python's,
        `max_depth` levels below them too (None: all), named by their relative paths."""
        return [
            (n, _wrap(m)) for n, m in run(_collect, self._async.members(max_depth), only_reads=True)
        ]

    def arrays(self) -> list[tuple[str, Array]]:
        """`(name, array)` for the members that are arrays."""
        return [(n, Array(a)) for n, a in run(self._async.arrays, only_reads=True)]

    def groups(self) -> list[tuple[str, Group]]:
        """`(name, group)` for the members that are groups."""
        return [(n, Group(g)) for n, g in run(self._async.groups, only_reads=True)]

    def create_group(
        self, name: str, *, attributes: Mapping[str, Any] | None = None, overwrite: bool = False
    ) -> Group:
        """Create the member group `name` (`overwrite` replaces whatever is there)."""
        return Group(
            run(self._async.create_group, name, attributes=attributes, overwrite=overwrite)
        )

    def require_group(self, name: str) -> Group:
        """The member group `name`, created when missing."""
        return Group(run(self._async.require_group, name))

    def create_array(
        self,
        name: str,
        *,
        shape: Any = None,
        dtype: Any = None,
        overwrite: bool = False,
        **options: Any,
    ) -> Array:
        """Create the member array `name`; the arguments are those of `aiozarr.create_array`."""
        return Array(
            run(
                self._async.create_array,
                name,
                shape=shape,
                dtype=dtype,
                overwrite=overwrite,
                **local_data(options),
            )
        )

    def require_array(
        self, name: str, *, shape: Any, dtype: Any = None, exact: bool = False, **options: Any
    ) -> Array:
        """The member array `name` if its shape and dtype fit, else a new one."""
        return Array(
            run(self._async.require_array, name, shape=shape, dtype=dtype, exact=exact, **options)
        )

    def update_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `attributes` into the stored ones and write them; returns the new attributes."""
        return run(self._async.update_attributes, attributes)

    def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the stored attributes with `attributes`; returns them."""
        return run(self._async.replace_attributes, attributes)

    def delete_attributes(self, names: Iterable[str]) -> dict[str, Any]:
        """Remove the attributes `names` from the stored ones; returns the attributes now."""
        return run(self._async.delete_attributes, names)

    def tree(self, *, max_depth: int | None = None) -> str:
        """The hierarchy below this group as text, one line per node with its shape, dtype,
        chunks and shards."""
        return run(self._async.tree, max_depth=max_depth, only_reads=True)


async def _collect(iterator: Any) -> list[Any]:
    return [item async for item in iterator]


def _wrap(node: AsyncArray | AsyncGroup) -> Array | Group:
    return Array(node) if isinstance(node, AsyncArray) else Group(node)


def _wrap_or(node: AsyncArray | AsyncGroup | None, default: Any) -> Array | Group | Any:
    return default if node is None else _wrap(node)
