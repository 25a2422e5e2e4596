"""`StoredArray`: what the engine needs to know about one array to read or write it."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aiozarr import config
from aiozarr.codecs import CodecChain, ShardLayout
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.storage.base import Store
from aiozarr.storage.cache import LRUByteCache


def _index_cache() -> LRUByteCache:
    return LRUByteCache(config.get().shard_index_cache_bytes)


@dataclass
class StoredArray:
    """An array's store, key prefix, metadata and bound codec chain, plus its caches."""

    store: Store
    prefix: str  # "" or "path/to/array/"
    meta: ArrayMetadata
    chain: CodecChain
    index_cache: LRUByteCache = field(default_factory=_index_cache)

    @functools.cached_property
    def layout(self) -> ShardLayout | None:
        """The shard layout when the array is sharded, else None."""
        sharding = self.chain.sharding
        return None if sharding is None else sharding.layout(self.chain.spec)

    @property
    def read_chunk_shape(self) -> tuple[int, ...]:
        """The grid selections are projected onto: inner chunks when sharded."""
        layout = self.layout
        return self.meta.chunk_shape if layout is None else layout.chunk_shape

    @property
    def read_chunk_nbytes(self) -> int:
        """Decoded bytes of one chunk of the read grid."""
        return math.prod(self.read_chunk_shape) * self.meta.dtype.itemsize

    @property
    def fill_value(self) -> Any:
        """The value of unwritten elements (zero of the dtype when none is set)."""
        if self.meta.fill_value is None:
            return np.zeros((), dtype=self.meta.dtype)[()]
        return self.meta.fill_value

    def key(self, chunk_coords: tuple[int, ...]) -> str:
        return self.prefix + self.meta.chunk_key(chunk_coords)
