"""`AsyncArray`: an array's metadata, store and bound codec chain; reads and writes.

Every I/O method here is the one implementation; the sync `Array` forwards to it. It
is the one node that holds the engine's view of the array (`StoredArray`, made by the
engine's door `engine/entry.py::stored_array`, as the zarr-python pipeline makes its
own); what needs only values lives beside it: planning selections
(`selection_plans.py`), converting a value to store (`write_values.py`), shape and grid
changes (`shape_changes.py`), codecs by role (`codec_roles.py`), the stored size
(`stored_size.py`) and the description (`description.py`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, NoReturn

import anyio
import numpy as np

from aiozarr import config as settings
from aiozarr.codecs import CodecChain
from aiozarr.engine import entry as engine
from aiozarr.engine.entry import CacheSettings, ShowProgress, StoredArray, as_callback
from aiozarr.errors import (
    AiozarrError,
    IrregularGridError,
    MetadataError,
    NodeNotFoundError,
    ReadOnlyError,
    unwrap_group,
)
from aiozarr.metadata.dtypes import object_items
from aiozarr.metadata.model import ArrayMetadata, CodecMetadata, GroupMetadata
from aiozarr.nodes import (
    codec_roles,
    hierarchy,
    placement,
    selection_plans,
    shape_changes,
    shrinking,
    stored_size,
)
from aiozarr.nodes import node_updates as updates
from aiozarr.nodes.creation import array_config, array_metadata
from aiozarr.nodes.description import ArrayDescription, ArrayInfo, array_info, describe_opened
from aiozarr.nodes.write_values import as_value, value_shape
from aiozarr.selection.chunk_grid import RectilinearGrid
from aiozarr.selection.indexing import Indexer, basic_indexer, orthogonal_indexer
from aiozarr.selection.vectorized import coordinate_indexer, mask_indexer
from aiozarr.storage.protocol import Store

Selection = Any


class AsyncArray(hierarchy.NodeLocation):
    """A Zarr array (v2 or v3, sharded or not) read and written with `await`.

    Open one with `aiozarr.open_array_async` or create one with `create_array_async`.
    """

    def __init__(
        self,
        store: Store,
        path: str,
        metadata: ArrayMetadata,
        *,
        config: Mapping[str, Any] | None = None,
        cache: CacheSettings | None = None,
    ) -> None:
        #: Settings this array applies to its own calls (`create_array(config=...)`).
        self._config = array_config(config)
        self._store, self._cache = store, cache  # the cache settings travel in pickles
        self._path = hierarchy.normalize_path(path)
        key = hierarchy.metadata_key(self._path, metadata)
        if metadata.chunk_grid is not None:
            shape_changes.check_rectilinear(metadata, key)
        chain = CodecChain.from_metadata(metadata, key)
        self._stored = engine.stored_array(
            store, hierarchy.chunk_prefix(self._path, metadata), metadata, chain, cache
        )

    # -- opening and creating ------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        store: Store,
        path: str = "",
        *,
        zarr_format: Literal[2, 3] | None = None,
        cache: CacheSettings | None = None,
    ) -> AsyncArray:
        """Open the array at `path` (decoded chunks kept per `cache`, else per
        `aiozarr.config`); `NodeNotFoundError` if there is none."""
        path = hierarchy.normalize_path(path)
        meta = await hierarchy.read_node(store, path, zarr_format, array_only=True)
        if isinstance(meta, GroupMetadata):
            raise NodeNotFoundError(f"{path or '/'!r} in {store!r} is a group, not an array")
        return cls(store, path, meta, cache=cache)

    @classmethod
    async def create(
        cls,
        store: Store,
        path: str = "",
        *,
        shape: int | Sequence[int] | None = None,
        dtype: Any = None,
        overwrite: bool = False,
        data: Any = None,
        config: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> AsyncArray:
        """Create an array at `path`; options are those of `aiozarr.create_array`.

        `data=` (an array-like) gives the shape and, unless `dtype=` is given, the data
        type, and is written into the new array, as zarr-python's `data=`.
        """
        path = hierarchy.normalize_path(path)
        if data is not None:
            if shape is not None:
                raise MetadataError(
                    "create_array: give data= or shape=, not both (the data gives the shape)"
                )
            dtype = np.asarray(data).dtype if dtype is None else dtype
            shape = value_shape(data, dtype)
        if shape is None or dtype is None:
            raise TypeError("create_array() needs shape= and dtype=, or data=")
        meta = array_metadata(shape=shape, dtype=dtype, **options)
        array = cls(store, path, meta, config=config)  # its codec chain: bad codecs fail here
        if data is not None:  # data the dtype cannot hold is refused before any write
            data = array._as_value(data, shape)
        await placement.prepare_node(store, path, meta.zarr_format, overwrite=overwrite, new=meta)
        await hierarchy.write_node(store, path, meta)
        if overwrite:  # the node replaced: no snapshot above may describe it
            await updates.replaced_in_snapshots(store, path, meta)
        if data is not None:
            await array.setitem(..., data)
        return array

    # -- properties ------------------------------------------------------------------------

    @property
    def metadata(self) -> ArrayMetadata:
        """The array's metadata, whatever its format (`metadata.to_dict()`: the document)."""
        return self._stored.meta

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return self.metadata.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy data type of the values read."""
        return self.metadata.dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """The decoded size in bytes (what `getitem(...)` of everything returns)."""
        return self.size * self.dtype.itemsize

    @property
    def chunks(self) -> tuple[int, ...]:
        """The shape of a chunk (the inner chunk when the array is sharded).

        An unsharded array on a rectilinear grid has no one chunk shape: this raises
        `IrregularGridError` then (use `read_chunk_sizes`), as zarr-python does.
        """
        stored = self._stored
        layout = stored.shard_layout
        if stored.rectilinear is not None and layout is None:
            raise IrregularGridError(
                f"array {self.name} has a rectilinear chunk grid: its chunks have no one "
                "shape (see read_chunk_sizes, or metadata.chunk_grid for every edge)"
            )
        return stored.read_chunk_shape if layout is None else layout.chunk_shape

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shape of a shard, or None when the array is not sharded.

        Sharded on a rectilinear grid, shards have no one shape: this raises
        `IrregularGridError` then (use `write_chunk_sizes`).
        """
        stored = self._stored
        if stored.shard_layout is None:
            return None
        if stored.rectilinear is not None:
            raise IrregularGridError(
                f"array {self.name} has a rectilinear shard grid: its shards have no one "
                "shape (see write_chunk_sizes, or metadata.chunk_grid for every edge)"
            )
        return self.metadata.chunk_shape

    @property
    def is_sharded(self) -> bool:
        """Whether each stored object is a shard of inner chunks (`sharding_indexed`)."""
        return self._stored.shard_layout is not None

    @property
    def rectilinear_grid(self) -> RectilinearGrid | None:
        """The grid of stored objects when their shapes differ, else None (one shape:
        `chunks` and `shards` describe it as a regular grid)."""
        return self._stored.rectilinear

    @property
    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the length of each chunk (inner chunk when sharded), the last one cut
        at the array's end: dask's `chunks`. Defined for every grid."""
        return self._stored.read_chunk_sizes()

    @property
    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the length of each stored object (shard, or chunk when unsharded)
        inside the array: the units a write replaces whole."""
        return self._stored.write_chunk_sizes()

    @property
    def fill_value(self) -> Any:
        """The value of elements never written (None: a v2 array without one)."""
        return self.metadata.fill_value

    @property
    def attrs(self) -> dict[str, Any]:
        """A copy of the array's attributes, nested values too (change them with
        `update_attributes`): a list changed in place changes no handle's metadata."""
        return copy.deepcopy(dict(self.metadata.attributes))

    @property
    def zarr_format(self) -> int:
        """1, 2 or 3 (1 and the 2020 draft are read only)."""
        return self.metadata.zarr_format

    @property
    def codec_chain(self) -> CodecChain:
        """The codecs bound to this array's chunk shape and data type."""
        return self._stored.chain

    @property
    def stored(self) -> StoredArray:
        """The engine's view of this array (store, key prefix, chain, caches): for the
        engine and its tests only (tests/test_layers.py keeps it so)."""
        return self._stored

    def chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        """The key (path included) of the stored object at grid coords `chunk_coords`."""
        return self._stored.key(chunk_coords)

    # -- zarr-python's descriptions ------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """Whether the array cannot be written (its store is read-only)."""
        return not self._store.writable

    @property
    def nchunks(self) -> int:
        """Number of chunks in the grid (inner chunks when sharded), as zarr-python's."""
        return math.prod(self._stored.read_grid_counts())

    @property
    def order(self) -> Literal["C", "F"]:
        """v2's `order`; "C" for v3, where an F layout is a `transpose` codec (in `filters`)."""
        return self.metadata.order if self.zarr_format != 3 else "C"

    @property
    def filters(self) -> tuple[Any, ...]:
        """Array-to-array codecs (v3: `CodecMetadata`), or v2's filters (numcodecs codecs)."""
        return codec_roles.filters(self.metadata)

    @property
    def serializer(self) -> CodecMetadata | None:
        """The array-to-bytes codec (v3), None for v2, as zarr-python's."""
        return codec_roles.serializer(self.metadata)

    @property
    def compressors(self) -> tuple[Any, ...]:
        """Bytes-to-bytes codecs (v3: `CodecMetadata`; v2: its compressor in a tuple)."""
        return codec_roles.compressors(self.metadata)

    async def _stored_keys(self) -> list[str]:
        """Every key of the array (metadata and chunks): one listing."""
        return await stored_size.array_keys(self._store, self._path, self._stored.prefix)

    async def nchunks_initialized(self) -> int:
        """Chunks stored, in the units of `nchunks` (one listing): objects x chunks per
        shard, or one each for shards read whole (`StoredArray.layout` None)."""
        keys = await self._stored_keys()
        stored = stored_size.chunk_objects(self.metadata, self._stored.prefix, keys)
        if self._stored.layout is None or self._stored.rectilinear is not None:
            return len(stored)
        return len(stored) * (math.prod(self.metadata.chunk_shape) // math.prod(self.chunks))

    async def nbytes_stored(self) -> int:
        """Bytes the array takes in its store, metadata and chunks (one listing, then sizes)."""
        return await stored_size.total_bytes(self._store, await self._stored_keys())

    async def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow the array along `axis` by `data` and write it there; the new shape.

        The growth is applied to the shape as stored (another writer's append included)
        and committed first; `data` then goes to the end that shape gave, so concurrent
        appends all land, one after another (`node_updates.py`). A write that fails or is
        cancelled takes the growth back, unless another change came after it. A growth
        whose answer was lost cannot be told from another append's by as much: that is
        `WriteOutcomeUnknownError`, and nothing is written (unless `single_writer`).
        """
        values = self._as_value(data, value_shape(data, self.dtype))  # before it grows
        with anyio.CancelScope(shield=True):  # landed or not: a cancel here cannot know
            change = await self._update_metadata(
                lambda meta: shape_changes.grown(meta, values.shape, axis, self.name),
                claim=True,
            )
        _, region = shape_changes.appended(change.before.shape, values.shape, axis, self.name)
        try:
            await self.setitem(region, values)
        except BaseException as error:  # else a rerun would append after a band of fill values
            await undo_growth(self, (change.before.shape, change.after.shape), error)
            raise
        return change.after.shape

    async def info_complete(self) -> ArrayInfo:
        """`info()` with what needs the store: bytes stored and chunks initialized."""
        stored, initialized = await self.nbytes_stored(), await self.nchunks_initialized()
        return self.info(nbytes_stored=stored, nchunks_initialized=initialized)

    # -- reading ---------------------------------------------------------------------------

    async def getitem(self, selection: Selection = ..., *, progress: ShowProgress = None) -> Any:
        """The values at `selection`, as numpy and zarr-python read them: ints and slices
        select a block, integer arrays on every axis select points (`vindex`), a boolean
        array of the array's shape selects its true elements, one array among ints and
        slices selects orthogonally (`oindex`).

        `progress=True` shows a progress bar; a callback `progress(done, total)` is
        called as each chunk is finished.
        """
        return await self._read(self._indexer(selection), progress)

    def getitem_inline(self, selection: Selection = ...) -> tuple[bool, Any]:
        """`(True, values)` read on the calling thread when the values are in memory
        (`MemoryStore`) and few chunks are needed; otherwise `(False, None)`: await
        `getitem` instead. The sync facade uses it to skip its thread hop."""
        read = engine.read_inline(self._stored, partial(self._indexer, selection), self._describe)
        if read is None:
            return False, None
        return True, selection_plans.result(read[1], read[0])  # (indexer, out)

    def _indexer(self, selection: Selection) -> Indexer:
        build = selection_plans.indexer_for(selection, self.ndim, self._describe)
        return self._plan(build, selection)

    def _plan(self, build: selection_plans.Build, selection: Selection) -> Indexer:
        """`build(selection, shape, grid)` over this array (`selection_plans.plan`)."""
        return selection_plans.plan(
            build, selection, self.shape, self.dtype, self._stored.read_grid, self._describe
        )

    def _describe(self) -> str:
        return f"array {self.name} in {self._store!r}"

    def _vindexer(self, selection: Selection) -> Indexer:
        build = selection_plans.vindexer_for(selection, self.ndim, self._describe)
        return self._plan(build, selection)

    def _block_indexer(self, selection: Selection) -> Indexer:
        grid = self.metadata.grid
        basic = selection_plans.block_basic(selection, self.shape, grid, self._describe)
        return self._plan(basic_indexer, basic)

    async def get_basic_selection(
        self, selection: Selection = ..., *, progress: ShowProgress = None
    ) -> Any:
        """The values at a numpy basic selection (ints, slices with any step, `...`)."""
        return await self._read(self._plan(basic_indexer, selection), progress)

    async def get_orthogonal_selection(
        self, selection: Selection, *, progress: ShowProgress = None
    ) -> Any:
        """The outer product of per-axis selections (ints, slices, int arrays, masks)."""
        return await self._read(self._plan(orthogonal_indexer, selection), progress)

    async def get_coordinate_selection(
        self, selection: Selection, *, progress: ShowProgress = None
    ) -> Any:
        """The points picked by one integer array per axis, broadcast together."""
        return await self._read(self._plan(coordinate_indexer, selection), progress)

    async def get_mask_selection(self, mask: Any, *, progress: ShowProgress = None) -> Any:
        """The elements where `mask` (a boolean array of the array's shape) is true, in
        C order, as a 1-d array."""
        return await self._read(self._plan(mask_indexer, mask), progress)

    async def get_vectorized_selection(
        self, selection: Selection, *, progress: ShowProgress = None
    ) -> Any:
        """`arr.vindex[selection]`: a coordinate or a mask selection."""
        return await self._read(self._vindexer(selection), progress)

    async def get_block_selection(
        self, selection: Selection, *, progress: ShowProgress = None
    ) -> Any:
        """The elements of whole blocks (shards when sharded, else chunks): per axis a
        block index or a step-1 slice of them (`arr.blocks[...]`)."""
        return await self._read(self._block_indexer(selection), progress)

    async def _read(self, indexer: Indexer, progress: ShowProgress) -> Any:
        out = engine.empty_output(indexer.shape, self.dtype, self._describe)
        with unwrap_group():
            await engine.read(self._stored, list(indexer), out, as_callback(progress))
        return selection_plans.result(out, indexer)

    # -- writing ---------------------------------------------------------------------------

    async def setitem(
        self, selection: Selection, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` (broadcast to the selection's shape) at `selection` (what
        `selection` means: see `getitem`)."""
        await self._write(self._indexer(selection), value, progress)

    async def set_basic_selection(
        self, selection: Selection, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` at a numpy basic selection."""
        await self._write(self._plan(basic_indexer, selection), value, progress)

    async def set_orthogonal_selection(
        self, selection: Selection, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` at the outer product of per-axis selections."""
        await self._write(self._plan(orthogonal_indexer, selection), value, progress)

    async def set_coordinate_selection(
        self, selection: Selection, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` (broadcast to the points' shape) at the points picked by one
        integer array per axis; where a point repeats, the last value wins."""
        await self._write(self._plan(coordinate_indexer, selection), value, progress)

    async def set_mask_selection(
        self, mask: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` (a scalar, or one value per true element) where `mask` is true."""
        await self._write(self._plan(mask_indexer, mask), value, progress)

    async def set_vectorized_selection(
        self, selection: Selection, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """`arr.vindex[selection] = value`: a coordinate or a mask selection."""
        await self._write(self._vindexer(selection), value, progress)

    async def set_block_selection(
        self, selection: Selection, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` in whole blocks (`arr.blocks[...] = value`)."""
        await self._write(self._block_indexer(selection), value, progress)

    async def _write(self, indexer: Indexer, value: Any, progress: ShowProgress) -> None:
        self._check_writable()
        value = self._as_value(value, indexer.result_shape).reshape(indexer.shape)
        with self._settings(), unwrap_group():
            await engine.write(self._stored, list(indexer), value, as_callback(progress))

    def _as_value(self, value: Any, shape: tuple[int, ...]) -> np.ndarray:
        """`value` in the array's dtype, broadcast to `shape`: the one conversion every
        write goes through (`write_values.as_value`), before anything is written."""
        items = object_items(self.metadata)  # v2 `dtype=str`: each element a str
        return as_value(value, shape, self.dtype, name=self.name, what=self._describe, items=items)

    def _settings(self) -> contextlib.AbstractContextManager[Any]:
        """The array's own settings (`create_array(config=...)`) over the caller's."""
        if not self._config:
            return contextlib.nullcontext()
        return settings.use(dataclasses.replace(settings.get(), **self._config))

    def _check_writable(self) -> None:
        if not self._store.writable:
            raise ReadOnlyError(f"array {self.name} in {self._store!r} is read-only")

    async def resize(self, new_shape: int | Sequence[int]) -> None:
        """Change the shape; chunks wholly outside the new shape are deleted and the part
        cut off of those kept is filled with the fill value (before the new shape is
        stored, so an append committed after it keeps its rows).

        On a rectilinear grid the edges stay as they are when shrinking (edges past the
        end are allowed); growing past the last edge repeats the last edge of that axis
        as often as needed.
        """
        self._check_writable()
        await self._reshaped(lambda meta: shape_changes.resized(meta, new_shape, self.name)[0])

    async def _reshaped(self, apply: updates.Apply[ArrayMetadata]) -> None:
        """Store `apply(metadata as stored)`, what a shrink cuts off cleared first."""
        clear_cut = partial(shrinking.clear_cut, self._stored, name=self.name, what=self._describe)
        with self._settings(), unwrap_group():
            await self._update_metadata(apply, clear_cut)

    async def update_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `attributes` into the array's attributes as stored; the attributes now."""
        self._check_writable()
        change = await self._update_metadata(updates.merged_attributes(attributes))
        return dict(change.after.attributes)

    async def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace all of the array's attributes with `attributes` and store them."""
        self._check_writable()
        change = await self._update_metadata(updates.replaced_attributes(attributes))
        return dict(change.after.attributes)

    async def delete_attributes(self, names: Iterable[str]) -> dict[str, Any]:
        """Remove the attributes `names` from those stored; the attributes now."""
        self._check_writable()
        change = await self._update_metadata(updates.without_attributes(names))
        return dict(change.after.attributes)

    async def _update_metadata(
        self,
        apply: updates.Apply[ArrayMetadata],
        prepare: updates.Prepare[ArrayMetadata] | None = None,
        *,
        claim: bool = False,
    ) -> updates.Change[ArrayMetadata]:
        """Store `apply(metadata as stored)` (`updates.update_node`) and keep it."""
        change = await updates.update_node(
            self._store, self._path, self.metadata, apply, prepare, claim=claim
        )
        self._stored = dataclasses.replace(self._stored, meta=change.after)
        return change

    # -- description ---------------------------------------------------------------------

    @property
    def description(self) -> ArrayDescription:
        """What the array is (shape, grid, codecs, ...) as one value: the facts `info`,
        the notebook view and `aiozarr info` show. No I/O."""
        return describe_opened(self)

    def info(
        self, *, nbytes_stored: int | None = None, nchunks_initialized: int | None = None
    ) -> ArrayInfo:
        """A short, human-readable description (`description` as text: a `str`, with its
        fields as attributes, as zarr-python's `ArrayInfo`)."""
        return array_info(
            self.description,
            dtype=self.dtype,
            store=self._store,
            read_only=self.read_only,
            nchunks=self.nchunks,
            nbytes_stored=nbytes_stored,
            nchunks_initialized=nchunks_initialized,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles as store description + path + metadata + settings: no connection, loop
        # or thread.
        opened = partial(AsyncArray, cache=self._cache)
        return (opened, (self._store, self._path, self.metadata), {"_config": self._config})

    def __repr__(self) -> str:
        return f"<AsyncArray {self._store!r} {self.name} shape={self.shape} dtype={self.dtype}>"

    # `arr[sel]` cannot await: these say what to write instead of "not subscriptable".
    def __getitem__(self, selection: Any) -> NoReturn:
        raise TypeError(
            "an AsyncArray reads with `await arr.getitem(sel)`, not `arr[sel]`; "
            "`aiozarr.open_array` opens an array that `arr[sel]` reads"
        )

    def __setitem__(self, selection: Any, value: Any) -> NoReturn:
        raise TypeError(
            "an AsyncArray writes with `await arr.setitem(sel, value)`, not `arr[sel] = value`;"
            " `aiozarr.open_array` opens an array that `arr[sel] = value` writes"
        )


async def undo_growth(array: AsyncArray, shapes: shape_changes.Growth, err: BaseException) -> None:
    """Undo `array`'s append growth (from, to) after `err` unless changed since (failed: a note)."""
    back = partial(shape_changes.taken_back, shapes=shapes, name=array.name)
    with anyio.CancelScope(shield=True):
        try:
            await array._reshaped(back)
        except (AiozarrError, OSError) as undo:
            err.add_note(shape_changes.left_grown(array.name, shapes[1], undo))
