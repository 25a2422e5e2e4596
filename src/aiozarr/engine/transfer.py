"""Move stored chunks from one array to another without going through a selection.

`migrate` keeps the chunk grid and moves what is stored: one `get_partial_values` for
a batch of chunks (of any arrays), the bytes kept as they are where the target reads
the same encoding, the others decoded and encoded again in one hop to the codec pool,
and one concurrent `set_many` for the batch. `copy`, which re-chunks, reads and writes
through `AsyncArray.getitem` / `setitem` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiozarr.codecs import CodecChain
from aiozarr.engine.chunk_cache import forget_written
from aiozarr.engine.executor import run_codec
from aiozarr.storage.protocol import Buffer, RangeRequest, Store

__all__ = ["ChunkMove", "MovedChunks", "move_chunks"]


@dataclass(frozen=True)
class ChunkMove:
    """One stored object to move: read `source_key`, write `target_key`.

    `keeps_bytes(data)` says whether the stored bytes can be written unchanged; when it
    does not, they are decoded with `source_chain` and encoded with `target_chain`.
    `nbytes` is the decoded size, which decides whether re-encoding needs the pool.
    """

    source_key: str
    target_key: str
    source_chain: CodecChain
    target_chain: CodecChain
    keeps_bytes: Callable[[Buffer], bool]
    nbytes: int


@dataclass(frozen=True)
class MovedChunks:
    """What one `move_chunks` did: chunks written as stored, and re-encoded ones.

    Chunks missing from the source (deleted since they were listed) are in neither.
    """

    copied: int
    reencoded: int


async def move_chunks(source: Store, target: Store, moves: Sequence[ChunkMove]) -> MovedChunks:
    """Move every chunk of `moves` from `source` to `target`: one batched read, one
    codec-pool hop for those re-encoded, one batched write."""
    found = await source.get_partial_values([RangeRequest(m.source_key) for m in moves])
    out: list[tuple[str, Buffer]] = []
    todo: list[tuple[ChunkMove, Buffer]] = []
    for move, data in zip(moves, found, strict=True):
        if data is None:  # deleted since the listing: nothing to move
            continue
        if move.keeps_bytes(data):
            out.append((move.target_key, data))
        else:
            todo.append((move, data))
    copied = len(out)
    if todo:
        nbytes = sum(move.nbytes for move, _ in todo)
        encoded = await run_codec(_reencode_all, todo, nbytes=nbytes)
        out += zip((move.target_key for move, _ in todo), encoded, strict=True)
    try:
        await target.set_many(out)
    finally:  # what a chunk cache held of them; a failed write may have written some
        forget_written(target, tuple(key for key, _ in out))
    return MovedChunks(copied=copied, reencoded=len(todo))


def _reencode_all(todo: Sequence[tuple[ChunkMove, Buffer]]) -> list[bytes]:
    """Decode stored chunks with their source's codecs and encode them with the target's."""
    encoded = []
    for m, data in todo:
        values = m.source_chain.decode(data, m.source_key)
        encoded.append(bytes(memoryview(m.target_chain.encode(values, m.target_key))))  # type: ignore[arg-type]
    return encoded
