"""Decoding landed bytes into the output, on the codec pool.

`Reads` is what every stage of one read shares (the array, the output, the progress);
`Reads.decode` sends the chunks that landed together to the codec pool, a group per
thread, and each chunk is decoded straight into its place in the output where it covers
a block of it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from aiozarr.engine.chunk_cache import ReadSession
from aiozarr.engine.executor import run_codec, run_in_groups
from aiozarr.engine.freed_memory import FreedMemory
from aiozarr.engine.located import LocatedChunk
from aiozarr.engine.progress import ChunkProgress
from aiozarr.engine.settings import ReadSettings
from aiozarr.engine.stored_array import StoredArray
from aiozarr.metadata.fill_value import fill_at
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.protocol import Buffer, Version

#: Debug lines per decode group (chunks, bytes, time): with the store's request lines
#: they make a read's timeline (`python -m benchmarks.timeline`).
log = logging.getLogger("aiozarr.read")


@dataclass(frozen=True, slots=True)
class DecodeJob:
    """One located chunk and its bytes, to decode into the output."""

    chunk: LocatedChunk
    data: Buffer
    #: the version of the object the bytes came from (None: that of the chunk's index)
    version: Version | None = None


@dataclass(frozen=True, slots=True)
class Reads:
    """What every stage of one read shares: the array, the output, the progress, the
    settings, the memory it has freed, the stored objects found missing."""

    array: StoredArray
    out: np.ndarray
    progress: ChunkProgress
    settings: ReadSettings
    memory: FreedMemory
    #: the keys of the stored objects (chunks, shards) the store does not hold
    missing: set[str] = field(default_factory=set)
    #: the chunk cache as this read sees it (None: no cache), which keeps what is decoded
    cache: ReadSession | None = None
    #: shards some of whose chunks the cache served, by the version they came from: the
    #: rest of each is read from that version or the read starts over (`check_pinned`);
    #: and chunks the cache served (or revalidated with their new bytes), which the other
    #: selections of a `read_many` read from that version too
    pinned: dict[str, Version] = field(default_factory=dict)
    #: decode on the event loop's thread, not the codec pool (`executor.decodes_here`)
    decode_here: bool = False

    def fill(self, projection: ChunkProjection) -> None:
        fill_at(self.out, projection.out_selection, self.array.fill_value)
        self.progress.advance()

    async def decode(self, jobs: list[DecodeJob]) -> None:
        """Decode `jobs` on the codec pool: one thread hop per group, a group per thread
        (`executor.split_for_threads`).

        A hop costs about as much as decoding a small chunk, so answers that land
        together are decoded together rather than one hop each.
        """
        if jobs:
            nbytes = sum(job.chunk.chain.spec.nbytes for job in jobs)
            await run_in_groups(jobs, nbytes, self._decode_group)

    async def _decode_group(self, group: Sequence[DecodeJob]) -> None:
        nbytes = sum(job.chunk.chain.spec.nbytes for job in group)
        began = time.monotonic()
        await run_codec(
            _decode_all, group, self.out, self.cache, nbytes=nbytes, here=self.decode_here
        )
        self.progress.advance(len(group))
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "decoded %d chunks of %r (%d bytes) in %.1f ms",
                len(group),
                group[0].chunk.key,
                nbytes,
                (time.monotonic() - began) * 1000,
            )


def _decode_all(group: Sequence[DecodeJob], out: np.ndarray, cache: ReadSession | None) -> None:
    for job in group:
        decode_job(job, out, cache)


def decode_job(job: DecodeJob, out: np.ndarray, cache: ReadSession | None) -> None:
    """Decode one job into its place in `out`, kept in `cache` if there is one."""
    if cache is None or job.chunk.part is not None:  # a part of a chunk is not kept
        decode_one(job.chunk, job.data, out)
    else:
        _decode_kept(job, out, cache)


def _decode_kept(job: DecodeJob, out: np.ndarray, cache: ReadSession) -> None:
    """Decode one chunk into `out`, and keep it in the cache."""
    chunk = job.chunk
    index = chunk.index
    version = job.version if job.version is not None or index is None else index.version
    cache.decode_kept(chunk.key, chunk.chain, job.data, chunk.projection, version, out)


def decode_one(chunk: LocatedChunk, data: Buffer, out: np.ndarray) -> None:
    """Decode one chunk into its place in `out` (straight into it when it covers a block)."""
    projection = chunk.projection
    if chunk.part is not None:
        out[projection.out_selection] = chunk.part.values(data, chunk.key)
    elif projection.is_complete_chunk and _is_view(projection.out_selection):
        chunk.chain.decode_into(data, out[projection.out_selection], chunk.key)
    else:
        out[projection.out_selection] = chunk.chain.decode_transient(data, chunk.key)[
            projection.chunk_selection
        ]


def _is_view(selection: tuple[object, ...]) -> bool:
    """Whether `out[selection]` is a view of `out`: no index arrays (an output placed
    in another order, as zarr-python's coordinate selections place theirs, is a copy)."""
    return not any(isinstance(part, np.ndarray) for part in selection)
