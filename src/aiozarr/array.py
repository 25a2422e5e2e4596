"""`AsyncArray`: an array's metadata, store and bound codec chain; reads and writes.

Every I/O method here is the one implementation; the sync `Array` forwards to it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from aiozarr import hierarchy
from aiozarr.codecs import CodecChain
from aiozarr.creation import array_metadata
from aiozarr.engine import read as engine_read
from aiozarr.engine import write as engine_write
from aiozarr.engine.progress import ProgressCallback
from aiozarr.engine.target import StoredArray
from aiozarr.errors import (
    InvalidValueError,
    MetadataError,
    NodeNotFoundError,
    ReadOnlyError,
    UnsupportedError,
    unwrap_group,
)
from aiozarr.indexing import Indexer, basic_indexer, is_basic_selection, orthogonal_indexer
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.storage.base import Store

Selection = Any


class AsyncArray(hierarchy.NodeLocation):
    """A Zarr array (v2 or v3, sharded or not) read and written with `await`.

    Open one with `aiozarr.open_array_async` or create one with `create_array_async`.
    """

    def __init__(self, store: Store, path: str, metadata: ArrayMetadata) -> None:
        self._store = store
        self._path = hierarchy.normalize_path(path)
        key = hierarchy.join(self._path, "zarr.json" if metadata.zarr_format == 3 else ".zarray")
        if metadata.chunk_grid is not None:
            raise UnsupportedError(f"{key}: rectilinear chunk grids cannot be read or written yet")
        chain = CodecChain.from_metadata(metadata, key)
        if chain.sharding is not None and chain.array_to_array:
            # The inner-chunk grid would lie in transposed coordinates; the engine plans
            # inner chunks on the array's own axes. zarr-python never writes this.
            raise UnsupportedError(
                f"{key}: array-to-array codecs before sharding_indexed "
                f"({', '.join(c.name for c in chain.array_to_array)}) are not supported"
            )
        self._stored = StoredArray(
            store=store,
            prefix=hierarchy.chunk_prefix(self._path, metadata),
            meta=metadata,
            chain=chain,
        )

    # -- opening and creating ------------------------------------------------------------

    @classmethod
    async def open(
        cls, store: Store, path: str = "", *, zarr_format: Literal[2, 3] | None = None
    ) -> AsyncArray:
        """Open the array at `path`; `NodeNotFoundError` if there is none."""
        path = hierarchy.normalize_path(path)
        meta = await hierarchy.read_node(store, path, zarr_format)
        if isinstance(meta, GroupMetadata):
            raise NodeNotFoundError(f"{path or '/'!r} in {store!r} is a group, not an array")
        return cls(store, path, meta)

    @classmethod
    async def create(
        cls,
        store: Store,
        path: str = "",
        *,
        shape: int | Sequence[int],
        dtype: Any,
        overwrite: bool = False,
        **options: Any,
    ) -> AsyncArray:
        """Create an array at `path`; options are those of `aiozarr.create_array`."""
        path = hierarchy.normalize_path(path)
        meta = array_metadata(shape=shape, dtype=dtype, **options)
        array = cls(store, path, meta)  # builds the codec chain: bad codecs fail before writing
        await hierarchy.prepare_node(store, path, meta.zarr_format, overwrite=overwrite)
        await hierarchy.write_node(store, path, meta)
        return array

    # -- properties ------------------------------------------------------------------------

    @property
    def metadata(self) -> ArrayMetadata:
        return self._stored.meta

    @property
    def shape(self) -> tuple[int, ...]:
        return self.metadata.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.metadata.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def chunks(self) -> tuple[int, ...]:
        """The shape of a chunk (the inner chunk when the array is sharded)."""
        return self._stored.read_chunk_shape

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shape of a shard, or None when the array is not sharded."""
        return None if self._stored.layout is None else self.metadata.chunk_shape

    @property
    def fill_value(self) -> Any:
        return self.metadata.fill_value

    @property
    def attrs(self) -> dict[str, Any]:
        """A copy of the array's attributes (change them with `update_attributes`)."""
        return dict(self.metadata.attributes)

    @property
    def zarr_format(self) -> int:
        return self.metadata.zarr_format

    @property
    def codec_chain(self) -> CodecChain:
        return self._stored.chain

    @property
    def stored(self) -> StoredArray:
        """The engine's view of this array (store, key prefix, chain, caches)."""
        return self._stored

    # -- reading ---------------------------------------------------------------------------

    async def getitem(
        self, selection: Selection = ..., *, progress: ProgressCallback | None = None
    ) -> Any:
        """The values at `selection` (numpy basic indexing; arrays select orthogonally).

        `progress(done, total)` is called as each chunk is finished.
        """
        if is_basic_selection(selection):
            indexer = basic_indexer(selection, self.shape, self.chunks)
        else:
            indexer = orthogonal_indexer(selection, self.shape, self.chunks)
        return await self._read(indexer, progress)

    async def get_orthogonal_selection(
        self, selection: Selection, *, progress: ProgressCallback | None = None
    ) -> Any:
        """The outer product of per-axis selections (ints, slices, int arrays, masks)."""
        return await self._read(orthogonal_indexer(selection, self.shape, self.chunks), progress)

    async def _read(self, indexer: Indexer, progress: ProgressCallback | None) -> Any:
        out = engine_read.empty_output(indexer.shape, self.dtype)
        with unwrap_group():
            await engine_read.read(self._stored, list(indexer), out, progress)
        return out[()] if out.ndim == 0 else out

    # -- writing ---------------------------------------------------------------------------

    async def setitem(
        self, selection: Selection, value: Any, *, progress: ProgressCallback | None = None
    ) -> None:
        """Store `value` (broadcast to the selection's shape) at `selection`."""
        if is_basic_selection(selection):
            indexer = basic_indexer(selection, self.shape, self.chunks)
        else:
            indexer = orthogonal_indexer(selection, self.shape, self.chunks)
        await self._write(indexer, value, progress)

    async def set_orthogonal_selection(
        self, selection: Selection, value: Any, *, progress: ProgressCallback | None = None
    ) -> None:
        """Store `value` at the outer product of per-axis selections."""
        indexer = orthogonal_indexer(selection, self.shape, self.chunks)
        await self._write(indexer, value, progress)

    async def _write(self, indexer: Indexer, value: Any, progress: ProgressCallback | None) -> None:
        self._check_writable()
        value = self._as_value(value, indexer.shape)
        with unwrap_group():
            await engine_write.write(self._stored, list(indexer), value, progress)

    def _as_value(self, value: Any, shape: tuple[int, ...]) -> np.ndarray:
        try:
            array = np.asarray(value)
            if array.dtype != self.dtype:
                if not np.can_cast(array.dtype, self.dtype, casting="same_kind") and not (
                    array.dtype.kind in "iub" and self.dtype.kind in "iufc"
                ):
                    raise TypeError(f"cannot cast {array.dtype} to {self.dtype}")
                array = array.astype(self.dtype)
            return np.broadcast_to(array, shape)
        except (TypeError, ValueError) as error:
            raise InvalidValueError(
                f"cannot store a value of dtype {np.asarray(value).dtype} and shape "
                f"{np.shape(value)} in {self.name} (dtype {self.dtype}, selection shape "
                f"{shape}): {error}"
            ) from None

    def _check_writable(self) -> None:
        if not self._store.writable:
            raise ReadOnlyError(f"array {self.name} in {self._store!r} is read-only")

    async def resize(self, new_shape: int | Sequence[int]) -> None:
        """Change the shape; chunks wholly outside the new shape are deleted."""
        self._check_writable()
        shape = (new_shape,) if isinstance(new_shape, int) else tuple(int(s) for s in new_shape)
        if len(shape) != self.ndim or any(s < 0 for s in shape):
            raise MetadataError(
                f"cannot resize {self.name} from {self.shape} to {shape}: "
                f"expected {self.ndim} non-negative sizes"
            )
        old = self.metadata
        grid = old.chunk_shape
        old_grid = [range(math.ceil(s / c)) for s, c in zip(old.shape, grid, strict=True)]
        new_counts = [math.ceil(s / c) for s, c in zip(shape, grid, strict=True)]
        stale = [
            self._stored.key(coords)
            for coords in np.ndindex(*[len(r) for r in old_grid])
            if any(c >= n for c, n in zip(coords, new_counts, strict=True))
        ]
        await self._replace_metadata(dataclasses.replace(old, shape=shape))
        if stale:
            await self._store.delete_many(stale)
            for key in stale:
                self._stored.index_cache.invalidate(key)

    async def update_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `attributes` into the array's attributes and store them."""
        self._check_writable()
        merged = {**self.metadata.attributes, **attributes}
        await self._replace_metadata(dataclasses.replace(self.metadata, attributes=merged))
        return merged

    async def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace all of the array's attributes with `attributes` and store them."""
        self._check_writable()
        new = dict(attributes)
        await self._replace_metadata(dataclasses.replace(self.metadata, attributes=new))
        return new

    async def _replace_metadata(self, meta: ArrayMetadata) -> None:
        await hierarchy.write_node(self._store, self._path, meta)
        self._stored = dataclasses.replace(self._stored, meta=meta)

    # -- description -----------------------------------------------------------------------

    def info(self) -> str:
        """A short, human-readable description."""
        meta = self.metadata
        codecs = (
            ", ".join(c.name for c in meta.codecs)
            if meta.zarr_format == 3
            else f"filters={meta.filters}, compressor={meta.compressor}"
        )
        lines = [
            f"Type               : Array (Zarr v{meta.zarr_format})",
            f"Name               : {self.name}",
            f"Shape              : {self.shape}",
            f"Data type          : {self.dtype}",
            f"Chunk shape        : {self.chunks}",
            f"Shard shape        : {self.shards}",
            f"Fill value         : {meta.fill_value!r}",
            f"Codecs             : {codecs}",
            f"Dimension names    : {meta.dimension_names}",
            f"Store              : {self._store!r}",
            f"Bytes (decoded)    : {self.nbytes}",
        ]
        return "\n".join(lines)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles as store description + path + metadata: no connection, loop or thread.
        return (AsyncArray, (self._store, self._path, self.metadata))

    def __repr__(self) -> str:
        return f"<AsyncArray {self._store!r} {self.name} shape={self.shape} dtype={self.dtype}>"
