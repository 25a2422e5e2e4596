"""`StoredArray`: what the engine needs to know about one array to read or write it."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from aiozarr import config
from aiozarr.byte_cache import LRUByteCache
from aiozarr.codecs import CodecChain, ShardLayout, layout_of
from aiozarr.engine.chunk_cache import ArrayCache, forget_written
from aiozarr.metadata.fill_value import unset_fill
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.selection.chunk_grid import RectilinearGrid, grid_counts
from aiozarr.sizes import ceil_div
from aiozarr.storage.protocol import Store


def _index_cache() -> LRUByteCache:
    return LRUByteCache(config.get().shard_index_cache_bytes)


@dataclass
class StoredArray:
    """An array's store, key prefix, metadata and bound codec chain, plus its caches.

    On a rectilinear grid (`rectilinear` is not None) each chunk, or each shard, has its
    own shape: `chain_for` and `layout_for` give the chain and shard layout of one.
    A rectilinear grid whose chunks all have one shape is read as a regular grid.
    """

    store: Store
    prefix: str  # "" or "path/to/array/"
    meta: ArrayMetadata
    chain: CodecChain
    index_cache: LRUByteCache = field(default_factory=_index_cache)
    #: Shard indexes being read now, by key: a read that needs one waits for it.
    index_loads: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    #: Decoded chunks kept (`engine/chunk_cache.py`); None: not cached.
    chunk_cache: ArrayCache | None = None
    #: An answer for a span of one of its chunks told no stored size to check it by
    #: (`engine/chunk_parts.py`): its uncompressed chunks are read whole from then on.
    whole_chunks: bool = False
    #: A shard needed whole was larger than its chunks and index can be (bytes no entry
    #: points to, `engine/located.py::refused_whole`): its shards are read by their
    #: index from then on.
    shards_by_index: bool = False

    def forget(self, *keys: str, written: bool = False) -> None:
        """Forget what the caches hold of the objects `keys` (`written`: they were
        just written or deleted through this process)."""
        self.index_cache.invalidate(*keys)
        if written:  # whichever handle, cached or not, wrote them
            forget_written(self.store, keys)
        elif self.chunk_cache is not None:
            self.chunk_cache.forget(*keys)

    @cached_property
    def rectilinear(self) -> RectilinearGrid | None:
        """The grid of stored objects when their shapes differ, else None (regular)."""
        grid = self.meta.chunk_grid
        return None if grid is None or grid.uniform_shape is not None else grid

    @cached_property
    def layout(self) -> ShardLayout | None:
        """The shard layout (of the largest shard) when the array is read and written by
        inner chunks, else None. A sharded array with bytes->bytes codecs after the
        sharding codec (`[sharding_indexed, zstd]`: each shard compressed whole) has no
        range of its stored shards that is an inner chunk or the index, and one with
        array->array codecs before it that do not let an inner chunk be read alone
        (`CodecChain.reads_inner_chunks`: a cast that loses the fill value) cannot read
        a missing inner chunk without them: their shards are read, decoded and written
        whole, as chunks (`shard_layout` describes them)."""
        whole = self.chain.bytes_to_bytes or not self.chain.reads_inner_chunks()
        return None if whole else self.shard_layout

    @cached_property
    def shard_layout(self) -> ShardLayout | None:
        """The layout of the array's shards (of the largest) when it is sharded, else None."""
        return layout_of(self.chain)

    @property
    def read_chunk_shape(self) -> tuple[int, ...]:
        """The chunk shape selections are projected onto: inner chunks when sharded.

        On a rectilinear grid without sharding this is the largest chunk (see `read_grid`).
        """
        layout = self.layout
        return self.meta.chunk_shape if layout is None else layout.chunk_shape

    @property
    def read_chunk_nbytes(self) -> int:
        """Decoded bytes of one chunk of the read grid."""
        return math.prod(self.read_chunk_shape) * self.meta.dtype.itemsize

    @property
    def read_grid(self) -> tuple[int, ...] | RectilinearGrid:
        """The grid selections are projected onto: inner chunks when sharded (always
        regular: the inner chunk shape divides every shard), else the chunk grid."""
        if self.rectilinear is None or self.layout is not None:
            return self.read_chunk_shape
        return self.rectilinear

    def read_grid_counts(self) -> tuple[int, ...]:
        """Per axis, how many chunks of `read_grid` hold elements (`read_chunk_sizes`'
        lengths, counted without listing them)."""
        return grid_counts(self.meta.shape, self.read_grid)

    def chain_for(self, chunk_coords: tuple[int, ...]) -> CodecChain:
        """The chain that encodes chunk (or shard) `chunk_coords`."""
        grid = self.rectilinear
        if grid is None:
            return self.chain
        return self.chain.for_shape(grid.chunk_shape(chunk_coords))

    def layout_for(self, shard_coords: tuple[int, ...]) -> ShardLayout:
        """The layout of shard `shard_coords` of a sharded array."""
        grid = self.rectilinear
        layout = layout_of(self.chain, None if grid is None else grid.chunk_shape(shard_coords))
        assert layout is not None
        return layout

    @cached_property
    def inner_grid(self) -> RectilinearGrid:
        """A rectilinear shard grid in units of inner chunks (shard -> its inner chunks)."""
        assert self.rectilinear is not None and self.layout is not None
        return self.rectilinear.scaled_down(self.layout.chunk_shape)

    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the length of each stored object (shard or chunk) inside the array."""
        grid = self.meta.chunk_grid
        if grid is not None:
            return grid.sizes_within(self.meta.shape)
        return _regular_sizes(self.meta.shape, self.meta.chunk_shape)

    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the length of each chunk (inner chunk when sharded) inside the array."""
        if self.layout is None:
            return self.write_chunk_sizes()
        return _regular_sizes(self.meta.shape, self.layout.chunk_shape)

    @property
    def fill_value(self) -> Any:
        """The value of unwritten elements (`fill_value.unset_fill` when none is set)."""
        if self.meta.fill_value is None:
            return unset_fill(self.meta.dtype, self.meta.filters)
        return self.meta.fill_value

    def key(self, chunk_coords: tuple[int, ...]) -> str:
        return self.prefix + self.meta.chunk_key(chunk_coords)


def _regular_sizes(shape: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(min(c, s - i * c) for i in range(ceil_div(s, c)))
        for s, c in zip(shape, chunks, strict=True)
    )
