"""The engine's one entry point: what the layers above it (the nodes, the zarr-python
bridge, the tools, the integrations) use to read and write arrays.

`stored_array` makes the engine's view of an array (with its chunk cache, per
`CacheSettings`); `read`, `read_inline` and `write` run selections on it; under `gather`,
a `Collector` (`aiozarr.read_many`) or a `Window` (`aiozarr.batch()`, `loop_window()`
for reads started apart) reads the selections of many reads as one; the output
helpers refuse an output that cannot fit before anything is read. Everything else in
`engine/` is the engine's own (`tests/test_layers.py` fails on an import of it from
outside).
"""

from __future__ import annotations

from aiozarr.codecs import CodecChain, layout_of
from aiozarr.engine.chunk_cache import ArrayCache, CacheSettings, forget_deleted, forget_written
from aiozarr.engine.gathering import Collector, Window, gather, loop_window
from aiozarr.engine.output import check_addressable, check_output_size, empty_output, small_pages
from aiozarr.engine.progress import ShowProgress, as_callback
from aiozarr.engine.read import read, read_inline
from aiozarr.engine.settings import WriteSettings
from aiozarr.engine.stored_array import StoredArray
from aiozarr.engine.transfer import ChunkMove, MovedChunks, move_chunks
from aiozarr.engine.write import write
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.storage.protocol import Store

__all__ = [
    "CacheSettings",
    "ChunkMove",
    "Collector",
    "MovedChunks",
    "ShowProgress",
    "StoredArray",
    "Window",
    "WriteSettings",
    "as_callback",
    "check_addressable",
    "check_output_size",
    "empty_output",
    "forget_deleted",
    "forget_written",
    "gather",
    "loop_window",
    "move_chunks",
    "read",
    "read_inline",
    "small_pages",
    "stored_array",
    "write",
]


def stored_array(
    store: Store,
    prefix: str,
    meta: ArrayMetadata,
    chain: CodecChain,
    cache: CacheSettings | None = None,
) -> StoredArray:
    """The engine's view of the array of `meta` whose chunk keys start with `prefix`
    ("" or "path/to/array/") in `store`, encoded by `chain`: with its own shard index
    cache, and the chunk cache `cache` says (None: `aiozarr.config`'s). A sharding codec
    the engine cannot lay out (`layout_of`) raises here."""
    layout_of(chain)
    chunk_cache = ArrayCache.opened(store, cache)
    return StoredArray(store=store, prefix=prefix, meta=meta, chain=chain, chunk_cache=chunk_cache)
